//! Publisher confirms are awaited no longer than the publish deadline: with the broker
//! turned into a black hole (a proxy in front of the local RabbitMQ that stops forwarding,
//! connections left open), a publish returns at its deadline, every message unavailable
//! with `PublishDeadline`, instead of waiting for confirms that never come.

mod common;

use std::time::Duration;

use bandeja_amqp::AmqpTransport;
use bandeja_core::conformance::Ping;
use bandeja_core::envelope::Event;
use bandeja_core::record::{MessageKind, MessageRecord};
use bandeja_core::transport::{
    wire, Instant, Outgoing, PublishDeadline, Transport, TransportErrorKind,
};
use common::blackhole::BlackHole;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirms_are_awaited_no_longer_than_the_deadline() {
    common::logs();
    let proxy = BlackHole::start("127.0.0.1:5672").await;
    let prefix = common::namespace();
    let options =
        common::options(&prefix).url(format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port()));
    let transport = AmqpTransport::connect(options)
        .await
        .unwrap_or_else(|e| panic!("connect to RabbitMQ through the proxy: {e}"));
    let records: Vec<MessageRecord> = (0..3)
        .map(|n| {
            MessageRecord::from_event(&Event::new("Ping", format!("k{n}"), Ping { n }))
                .expect("record")
        })
        .collect();
    let outgoing: Vec<Outgoing<'_>> = records
        .iter()
        .map(|record| Outgoing {
            record,
            address: &record.message_type,
            partition: 0,
            body: wire::encode(record, Some("orders")),
        })
        .collect();
    let through = transport
        .publish(
            MessageKind::Event,
            &outgoing[..1],
            Instant::now() + Duration::from_secs(30),
        )
        .await;
    assert!(
        through[0].is_ok(),
        "published through the proxy: {through:?}"
    );

    proxy.swallow();
    let started = Instant::now();
    let timeout = Duration::from_millis(500);
    let publishing = transport.publish(MessageKind::Event, &outgoing, started + timeout);
    let results = tokio::time::timeout(Duration::from_secs(10), publishing)
        .await
        .expect("the publish returned (it waited for the black hole)");
    let took = started.elapsed();
    assert!(
        took >= timeout && took < timeout + Duration::from_secs(1),
        "returned at the deadline, not after {took:?}"
    );
    assert_eq!(results.len(), 3);
    for result in &results {
        let error = result.as_ref().expect_err("no confirm from a black hole");
        assert_eq!(error.kind, TransportErrorKind::Unavailable, "{error}");
        assert!(
            error.source.downcast_ref::<PublishDeadline>().is_some(),
            "{error:?}"
        );
    }
}
