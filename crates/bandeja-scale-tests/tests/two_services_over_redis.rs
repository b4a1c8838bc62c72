//! Two services, two databases, Redis Streams between them (issue: Kafka and Redis, item
//! 3): a producer process emits 10,000 events and 1,000 commands, a consumer process
//! handles them; in the middle of the run the `redis-server` process is stopped for 12 s
//! and started again on the same directory. Every message is handled exactly once in
//! effect; see `common::pair::run` for every check.
//!
//! The test runs its own `redis-server` (from `REDIS_SERVER`, default
//! `/usr/bin/redis-server`) on a free port, keeping an append-only file synced at every
//! write, as a Redis used as a broker does: its streams and groups survive the stop.
//! Stopping it disturbs no other test.

mod common;

use bandeja_scale_tests::redis_server::RedisServer;
use common::pair::{self, Broker};

/// The test's own server, stopped cleanly (SIGTERM) for the outage.
struct OwnRedis(RedisServer);

impl Broker for OwnRedis {
    fn transport(&self) -> &'static str {
        "redis"
    }

    fn url(&self) -> String {
        self.0.url()
    }

    fn stop(&mut self) {
        self.0
            .stop()
            .unwrap_or_else(|e| panic!("stop redis-server: {e}"));
    }

    fn start(&mut self) {
        self.0
            .resume()
            .unwrap_or_else(|e| panic!("start redis-server: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_services_over_redis_survive_a_broker_restart() {
    let mut server = OwnRedis(RedisServer::start().unwrap_or_else(|e| panic!("{e}")));
    pair::run(&mut server).await;
}
