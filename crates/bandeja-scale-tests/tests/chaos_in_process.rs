//! The chaos harness in CI, in process (issue 6, items 1 and 2, bounded): three
//! `scale-worker` processes on one PostgreSQL schema with the in-process transport; 6,000
//! messages (12 of them poison) emitted at 1,500 a second, a little faster than the three
//! debug-built workers drain, so they are busy when six SIGKILLs hit random workers at
//! random moments. Each killed worker is restarted, half of them with a named crash point
//! armed (`BANDEJA_CRASH_AT=<point>@<n>`), so they also abort inside a handler, after a
//! claim or after a handler's commit. The database decides: every tick handled exactly
//! once per subscriber, every poison row FAILED with its reason, nothing else; and the
//! rows a dead worker held were taken over within `lock-at-most-for` (2 s) plus a second.
//! The full run (50,000 messages, 20 kills) is `chaos` with its defaults: see
//! docs/reliability.md.

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_workers_lose_nothing_and_apply_nothing_twice() {
    let report = common::chaos::run(&[
        "--workers",
        "3",
        "--messages",
        "6000",
        "--emit-rate",
        "1500",
        "--kills",
        "6",
        "--crash-points",
        "--lease",
        "2",
        "--poison-every",
        "500",
        "--sample-every",
        "1",
    ])
    .await;
    assert_eq!(report.kills.len(), 6, "every planned kill happened");
    assert!(
        !report.takeovers_ms().is_empty(),
        "no kill caught a worker holding rows, so no takeover was measured: {:?}",
        report.kills
    );
    assert_eq!(report.emission.committed, 6_000);
    assert_eq!(report.verification.effects, 2 * (6_000 - 12));
}
