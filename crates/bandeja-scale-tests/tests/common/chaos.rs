//! Bounded chaos runs for CI: a [`Plan`] from flags, with the `scale-worker` built beside
//! the tests, run to its report; the run's text report goes to stderr, and the test fails
//! with it when a rule broke.

use bandeja_scale_tests::chaos::{self, Plan, Report};
use clap::Parser;

/// Runs the chaos plan of `flags` (the `chaos` binary's flags) against the tests'
/// database; panics with the report unless the contract held.
pub(crate) async fn run(flags: &[&str]) -> Report {
    let mut plan = Plan::try_parse_from(std::iter::once("chaos").chain(flags.iter().copied()))
        .unwrap_or_else(|e| panic!("bad chaos flags {flags:?}: {e}"));
    plan.database_url = super::database_url();
    plan.worker_bin = Some(env!("CARGO_BIN_EXE_scale-worker").into());
    plan.kafka_mock_bin = Some(env!("CARGO_BIN_EXE_kafka-mock").into());
    let report = chaos::run(&plan)
        .await
        .unwrap_or_else(|e| panic!("the chaos run could not be made: {e}"));
    eprint!("{}", report.text());
    assert!(report.passed(), "the contract broke:\n{}", report.text());
    report
}

/// The workload and worker faults every bounded broker run shares: 3 workers, 6,000
/// messages at 1,000/s (one in 500 poison), 4 kills with crash points, a 2 s lease, a
/// sample every 2 s.
const BROKER_WORKLOAD: [&str; 15] = [
    "--workers",
    "3",
    "--messages",
    "6000",
    "--emit-rate",
    "1000",
    "--kills",
    "4",
    "--crash-points",
    "--lease",
    "2",
    "--poison-every",
    "500",
    "--sample-every",
    "2",
];

/// The effects [`BROKER_WORKLOAD`] must leave: one per subscriber for each message but the
/// 12 poison ones (every 500th of 6,000).
const BROKER_EFFECTS: i64 = 2 * (6_000 - 12);

/// Runs [`BROKER_WORKLOAD`] over `transport` with the `faults` flags too; checks that every
/// kill happened and every effect is there.
async fn workload_run(transport: &str, faults: &[&str]) -> Report {
    let flags: Vec<&str> = ["--transport", transport]
        .into_iter()
        .chain(BROKER_WORKLOAD)
        .chain(faults.iter().copied())
        .collect();
    let report = run(&flags).await;
    assert_eq!(report.kills.len(), 4, "every planned kill happened");
    assert_eq!(report.verification.effects, BROKER_EFFECTS);
    report
}

/// The bounded broker run of CI (`chaos_over_nats`, `chaos_over_redis`) over `transport`:
/// [`BROKER_WORKLOAD`], a 10 s partition at 2 s, a 30 s SIGKILL outage of the run's own
/// broker at 14 s; checks that every fault happened and every effect is there.
pub(crate) async fn broker_run(transport: &str) {
    let report = workload_run(
        transport,
        &[
            "--broker-partition-at",
            "2",
            "--broker-partition",
            "10",
            "--broker-outage-at",
            "14",
            "--broker-outage",
            "30",
        ],
    )
    .await;
    assert_broker_down(&report, 30_000);
    let partition = report.broker_partition.as_ref().expect("a partition");
    assert!(partition.down_ms >= 10_000, "{partition:?}");
}

/// The bounded Kafka run of CI (`chaos_over_kafka`): [`BROKER_WORKLOAD`] over librdkafka's
/// mock cluster in a `kafka-mock` of the run's own, every broker down for 15 s at 6 s
/// (Kafka clients reconnect to the advertised address, so no proxy partitions them);
/// checks that every kill and the outage happened and every effect is there.
pub(crate) async fn kafka_mock_run() {
    let report = workload_run(
        "kafka",
        &["--broker-outage-at", "6", "--broker-outage", "15"],
    )
    .await;
    assert_broker_down(&report, 15_000);
}

/// Checks that the run's broker outage happened and lasted at least `at_least_ms`.
fn assert_broker_down(report: &Report, at_least_ms: u64) {
    let outage = report
        .broker_outage
        .as_ref()
        .expect("the plan's broker outage happened");
    assert!(outage.down_ms >= at_least_ms, "{outage:?}");
}

/// The bounded run over `tansu` (`chaos_over_tansu`, by hand, not in CI):
/// [`BROKER_WORKLOAD`] over a `tansu` of the run's own, without broker faults (its topics
/// live in its memory); checks that every kill happened and every effect is there.
pub(crate) async fn tansu_run() {
    workload_run("kafka", &["--kafka-brokers", "tansu"]).await;
}
