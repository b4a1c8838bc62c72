//! The chaos harness over Kafka (the same workload as `chaos_over_nats` and
//! `chaos_over_redis`) on librdkafka's mock cluster: real Kafka protocol between the
//! workers' client and the mock's brokers, in a `kafka-mock` process of the run's own.
//! Three `scale-worker` processes of one service on one PostgreSQL schema; 6,000 messages
//! emitted at 1,000 a second while four SIGKILLs hit random workers (restarted, some with
//! a crash point armed: after a publish before its mark, after an inbox insert before its
//! offsets are committed...), the consumer group handing a dead worker's partitions to the
//! others once its session times out; every broker down for 15 s in the middle. The
//! database decides: nothing lost, nothing applied twice, poison FAILED with its reason,
//! nothing else. The same run over a `tansu` broker is `chaos_over_tansu` (by hand).

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_with_crash_points_and_a_broker_outage_over_kafka_lose_nothing() {
    common::chaos::kafka_mock_run().await;
}
