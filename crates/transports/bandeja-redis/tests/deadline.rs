//! Replies are awaited no longer than the publish deadline: with the server turned into a
//! black hole (a proxy in front of the local Redis that stops forwarding, connections left
//! open), a publish returns at its deadline, every message unavailable with
//! `PublishDeadline`, instead of waiting for replies that never come.

mod common;

use bandeja_conformance::standalone::{publish_returns_at_its_deadline, BlackHole};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_are_awaited_no_longer_than_the_deadline() {
    let proxy = BlackHole::start("127.0.0.1:6379").await;
    let prefix = common::namespace();
    let options = common::options(&prefix).url(format!("redis://127.0.0.1:{}", proxy.port()));
    let transport = common::guarded(&prefix, options).await;
    publish_returns_at_its_deadline(&transport.inner, &proxy).await;
}
