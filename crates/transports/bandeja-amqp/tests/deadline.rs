//! Publisher confirms are awaited no longer than the publish deadline: with the broker
//! turned into a black hole (a proxy in front of the local RabbitMQ that stops forwarding,
//! connections left open), a publish returns at its deadline, every message unavailable
//! with `PublishDeadline`, instead of waiting for confirms that never come.

mod common;

use bandeja_amqp::AmqpTransport;
use bandeja_conformance::standalone::{publish_returns_at_its_deadline, BlackHole};

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
    publish_returns_at_its_deadline(&transport, &proxy).await;
}
