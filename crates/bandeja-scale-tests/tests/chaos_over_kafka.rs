//! The chaos harness over Kafka (the same workload as `chaos_over_nats` and
//! `chaos_over_redis`), built only with the crate's `tansu` feature and run by hand
//! (`scripts/ci/tansu.sh chaos`), not in CI: on tansu, about one run in three leaves a
//! partition unassigned after the kills (docs/brokers.md, "What was tested against what").
//! The run: three `scale-worker` processes of one service on one PostgreSQL
//! schema, publishing to and consuming from a `tansu` broker of the test's own (from
//! `TANSU`, default `$HOME/.cache/tansu-install/bin/tansu`; without it the test fails and
//! says to run `scripts/ci/tansu.sh install`). 6,000 messages emitted at 1,000 a second
//! while four SIGKILLs hit random workers (restarted, some with a crash point armed: after
//! a publish before its mark, after an inbox insert before its ack...), the consumer group
//! handing a dead worker's partitions to the others. The broker keeps its topics in memory,
//! so it is neither killed nor partitioned. The database decides, as in process: nothing
//! lost, nothing applied twice, poison FAILED with its reason, nothing else.

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_with_crash_points_over_tansu_lose_nothing() {
    common::chaos::kafka_run().await;
}
