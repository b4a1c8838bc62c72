//! The chaos harness in CI with a PostgreSQL restart (issue 6, item 4, bounded): three
//! `scale-worker` processes with the in-process transport; 4,000 messages emitted at 800 a
//! second; two seconds in, PostgreSQL is stopped for three seconds and started again
//! (`pg_ctlcluster … stop`, `… start`) under everybody, and two workers are SIGKILLed along the way. The workers log, back off,
//! reconnect and finish (none of them exits); the application's emission fails with an
//! error during the outage once its store's `acquire_timeout` (250 ms here) has passed — not
//! a hang, not a panic — and, tried again with the same ids,
//! loses nothing and writes nothing twice; the database decides as in the other chaos runs.
//!
//! It restarts the machine's PostgreSQL, so it is alone in its test binary (cargo runs test
//! binaries one after the other).

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_fails_emission_cleanly_and_loses_nothing() {
    let report = common::chaos::run(&[
        "--workers",
        "3",
        "--messages",
        "4000",
        "--emit-rate",
        "800",
        "--kills",
        "2",
        "--lease",
        "2",
        "--poison-every",
        "500",
        "--restart-database-at",
        "2",
        // A plain restart leaves the server down for well under a second here; stopped
        // for three seconds, it stays down long enough for every worker's cycle and many
        // emissions to meet the outage.
        "--database-down-for",
        "3",
        // Shorter than the outage, so emissions fail during it; with the default 5 s they
        // would wait for the database and succeed.
        "--emit-acquire-timeout",
        "0.25",
        "--sample-every",
        "1",
    ])
    .await;
    let restart = report
        .database_restart
        .as_ref()
        .expect("the database was restarted");
    assert!(
        restart.down_ms >= 3_000,
        "the database was down {} ms",
        restart.down_ms
    );
    assert!(
        report.emission.failed_attempts > 1,
        "emission never met the outage: {:?}",
        report.emission
    );
    assert!(
        report.emission.slowest_failure_ms < 5_000,
        "a failing emission took {} ms to say so",
        report.emission.slowest_failure_ms
    );
    assert!(report.unexpected_exits.is_empty());
    assert_eq!(report.verification.effects, 2 * (4_000 - 8));
}
