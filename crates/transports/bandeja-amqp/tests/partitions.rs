//! Services of one prefix must agree on the partition count: the first one records it on
//! the broker, a later process configured with another count is refused at start with an
//! error naming both, and one with the same count starts. Against the local RabbitMQ (a
//! broker that is not there fails the test).

mod common;

use bandeja_amqp::{AmqpError, AmqpTransport};
use bandeja_core::transport::TransportErrorKind;
use common::{namespace, options};

#[tokio::test]
async fn a_process_with_another_partition_count_is_refused_at_start() {
    common::logs();
    let prefix = namespace();
    let first = AmqpTransport::connect(options(&prefix).partitions(4))
        .await
        .unwrap_or_else(|e| panic!("connect to RabbitMQ at {}: {e}", common::url()));
    let refused = AmqpTransport::connect(options(&prefix).partitions(8))
        .await
        .expect_err("8 partitions where the system uses 4");
    assert_eq!(refused.kind(), TransportErrorKind::Rejected, "{refused}");
    let error = refused
        .get_ref()
        .downcast_ref::<AmqpError>()
        .unwrap_or_else(|| panic!("an AmqpError: {refused:?}"));
    assert!(
        matches!(
            error,
            AmqpError::PartitionMismatch { configured: 8, declared, .. } if declared == "4"
        ),
        "{error:?}"
    );
    let message = refused.to_string();
    for expected in [
        "configured with 8 partitions",
        "use 4",
        "set `partitions` to 4",
    ] {
        assert!(message.contains(expected), "{message:?} says {expected:?}");
    }
    let same = AmqpTransport::connect(options(&prefix).partitions(4))
        .await
        .expect("a second process with the same count starts");
    drop((first, same));
    let other = AmqpTransport::connect(options(&namespace()).partitions(8))
        .await
        .expect("another prefix is another system");
    drop(other);
}
