//! The chaos harness in CI, over Redis Streams (issue 18, item 9; the same run as
//! `chaos_over_nats`): three `scale-worker` processes of one service on one PostgreSQL
//! schema, publishing to and consuming from a `redis-server` of the test's own (an
//! append-only file synced at every write) through a proxy. 6,000 messages
//! emitted at 1,000 a second while four SIGKILLs hit random workers (restarted, some with a
//! crash point armed: after a publish before its mark, after an inbox insert before its
//! ack...); two seconds in, the proxy partitions workers and broker for 10 s (connections
//! open, no byte moving, no close, no reset); then the broker itself is SIGKILLed — every
//! connection cut without a close — and kept down for 30 s before it starts again on its
//! store. The database decides, as in process: nothing
//! lost, nothing applied twice, poison FAILED with its reason, nothing else.

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_a_partition_and_a_thirty_second_redis_outage_lose_nothing() {
    common::chaos::broker_run("redis").await;
}
