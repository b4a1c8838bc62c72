//! Services of one prefix must agree on the partition count: the streams record it when
//! created, a later process configured with another count is refused at start with an
//! error naming both, one with the same count starts, and streams declared before the
//! count was recorded get it recorded. Against the local NATS server (a server that is not
//! there fails the test).

mod common;

use async_nats::jetstream;
use bandeja_core::transport::TransportErrorKind;
use bandeja_core::MessageKind;
use bandeja_nats::{NatsError, NatsTransport};
use common::{namespace, options, Streams, URL};

#[tokio::test]
async fn a_process_with_another_partition_count_is_refused_at_start() {
    let prefix = namespace();
    let first = NatsTransport::connect(options(&prefix).partitions(4))
        .await
        .expect("connect to NATS at 127.0.0.1:4222 (nats-server -js)");
    let _cleanup = Streams::of(&first);
    let refused = NatsTransport::connect(options(&prefix).partitions(8))
        .await
        .expect_err("8 partitions where the streams say 4");
    assert_eq!(refused.kind(), TransportErrorKind::Rejected, "{refused}");
    let error = refused
        .get_ref()
        .downcast_ref::<NatsError>()
        .unwrap_or_else(|| panic!("a NatsError: {refused:?}"));
    assert!(
        matches!(
            error,
            NatsError::PartitionMismatch { configured: 8, declared: 4, stream } if stream == &first.stream(MessageKind::Event)
        ),
        "{error:?}"
    );
    let message = refused.to_string();
    for expected in [
        "configured with 8 partitions",
        "declared with 4",
        "set `partitions` to 4",
    ] {
        assert!(message.contains(expected), "{message:?} says {expected:?}");
    }
    NatsTransport::connect(options(&prefix).partitions(4))
        .await
        .expect("a second process with the same count starts");
}

#[tokio::test]
async fn streams_declared_without_a_count_get_the_first_process_count() {
    let prefix = namespace();
    let client = async_nats::connect(URL)
        .await
        .expect("connect to NATS at 127.0.0.1:4222 (nats-server -js)");
    let context = jetstream::new(client);
    // Streams as an older bandeja declared them: no description.
    for kind in ["EVENTS", "COMMANDS"] {
        context
            .create_stream(jetstream::stream::Config {
                name: format!("{}_{kind}", prefix.to_uppercase()),
                subjects: vec![format!("{prefix}.{}.>", kind.to_lowercase())],
                ..Default::default()
            })
            .await
            .expect("create an old-style stream");
    }
    let adopted = NatsTransport::connect(options(&prefix).partitions(4))
        .await
        .expect("the first process records its count");
    let _cleanup = Streams::of(&adopted);
    let refused = NatsTransport::connect(options(&prefix).partitions(2))
        .await
        .expect_err("2 partitions where 4 are recorded now");
    assert!(refused.to_string().contains("declared with 4"), "{refused}");
}
