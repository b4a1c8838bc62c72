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
