//! JetStream acknowledgements are awaited no longer than the publish deadline: with the
//! server turned into a black hole (a proxy in front of the local NATS server that stops
//! forwarding, connections left open), a publish returns at its deadline, every message
//! unavailable with `PublishDeadline`, instead of waiting for `PubAck`s that never come.

mod common;

use bandeja_conformance::standalone::{publish_returns_at_its_deadline, BlackHole};
use bandeja_nats::NatsTransport;
use common::{namespace, options, Streams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledgements_are_awaited_no_longer_than_the_deadline() {
    let proxy = BlackHole::start("127.0.0.1:4222").await;
    let prefix = namespace();
    let transport =
        NatsTransport::connect(options(&prefix).url(format!("nats://127.0.0.1:{}", proxy.port())))
            .await
            .unwrap_or_else(|e| panic!("connect to NATS through the proxy: {e}"));
    let _cleanup = Streams::of(&transport);
    publish_returns_at_its_deadline(&transport, &proxy).await;
}
