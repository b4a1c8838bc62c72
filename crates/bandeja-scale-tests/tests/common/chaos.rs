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
    let report = chaos::run(&plan)
        .await
        .unwrap_or_else(|e| panic!("the chaos run could not be made: {e}"));
    eprint!("{}", report.text());
    assert!(report.passed(), "the contract broke:\n{}", report.text());
    report
}

/// The bounded broker run of CI (`chaos_over_nats`, `chaos_over_redis`) over `transport`:
/// 3 workers, 6,000 messages at 1,000/s, 4 kills with crash points, a 10 s partition at
/// 2 s, a 30 s SIGKILL outage of the run's own broker at 14 s; checks that every fault
/// happened and every effect is there.
pub(crate) async fn broker_run(transport: &str) {
    let report = run(&[
        "--transport",
        transport,
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
        "--broker-partition-at",
        "2",
        "--broker-partition",
        "10",
        "--broker-outage-at",
        "14",
        "--broker-outage",
        "30",
        "--sample-every",
        "2",
    ])
    .await;
    let outage = report
        .broker_outage
        .as_ref()
        .expect("the broker was stopped");
    assert!(outage.down_ms >= 30_000, "{outage:?}");
    let partition = report.broker_partition.as_ref().expect("a partition");
    assert!(partition.down_ms >= 10_000, "{partition:?}");
    assert_eq!(report.kills.len(), 4, "every planned kill happened");
    assert_eq!(report.verification.effects, 2 * (6_000 - 12));
}
