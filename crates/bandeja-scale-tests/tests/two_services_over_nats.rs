//! Two services, two databases, NATS JetStream between them (issue: brokers, items 5 and
//! 6): a producer process emits 10,000 events and 1,000 commands, a consumer process
//! handles them; in the middle of the run the `nats-server` process is stopped for 12 s
//! and started again on the same store directory. Every message is handled exactly once in
//! effect; see `common::pair::run` for every check.
//!
//! The test runs its own `nats-server` (from `NATS_SERVER`, default `/usr/sbin/nats-server`)
//! on a free port with a store directory of its own, so stopping it disturbs no other test.

mod common;

use bandeja_scale_tests::nats_server::NatsServer;
use common::pair::{self, Broker};

/// The test's own server, stopped cleanly (SIGTERM) for the outage.
struct OwnNats(NatsServer);

impl Broker for OwnNats {
    fn transport(&self) -> &'static str {
        "nats"
    }

    fn url(&self) -> String {
        self.0.url()
    }

    fn stop(&mut self) {
        self.0
            .stop(true)
            .unwrap_or_else(|e| panic!("stop nats-server: {e}"));
    }

    fn start(&mut self) {
        self.0
            .resume()
            .unwrap_or_else(|e| panic!("start nats-server: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_services_over_nats_survive_a_broker_restart() {
    let mut server = OwnNats(NatsServer::start().unwrap_or_else(|e| panic!("{e}")));
    pair::run(&mut server).await;
}
