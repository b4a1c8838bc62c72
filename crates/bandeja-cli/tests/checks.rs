//! `bandeja status --check` as a monitoring check (one Nagios-style line, an exit code per
//! verdict) and `bandeja replay` refusing to run without a filter, on SQLite and
//! PostgreSQL.

mod common;

use bandeja_conformance::fixtures::TempDir;
use common::databases::{postgres_filled, sqlite_filled};
use common::{bandeja, listed, run_on, seed, SEEDED, SUCCEEDING};

/// The checks every store gets, on a seeded database (its [`SEEDED`] rows of the failing
/// subscriber FAILED, nothing PENDING).
fn assert_check_codes(database: &[&str]) {
    // FAILED rows over the default threshold 0, nothing stuck: WARNING, exit 5.
    let run = run_on(database, &["status", "--check"]).expect_code(5);
    let line = run.stdout.trim_end();
    assert_eq!(line.lines().count(), 1, "one line: {run:#?}");
    assert!(
        line.starts_with(&format!(
            "BANDEJA WARNING - FAILED: {SEEDED} rows (inbox_events {SEEDED}), threshold 0; \
             stuck: none, threshold PT5M;"
        )),
        "{run:#?}"
    );
    assert!(line.contains(&format!(
        "| pending=0 processing=0 failed={SEEDED};0 stuck=0;;0"
    )));
    assert!(run.stderr.contains("WARNING (exit 5)"), "{run:#?}");

    // As many FAILED rows as the threshold allows: OK, exit 0.
    let tolerated = SEEDED.to_string();
    let run = run_on(
        database,
        &["status", "--check", "--failed-threshold", &tolerated],
    )
    .expect_code(0);
    assert!(run.stdout.starts_with("BANDEJA OK - "), "{run:#?}");
    assert!(run.stderr.is_empty(), "{run:#?}");

    // The JSON verdict.
    let document = run_on(database, &["status", "--check", "--json"])
        .expect_code(5)
        .json();
    assert_eq!(document["state"], "WARNING");
    assert_eq!(document["exit_code"], 5);
    assert_eq!(document["failed"], SEEDED);
    assert_eq!(document["boxes"].as_array().map(Vec::len), Some(4));

    // Retried, the rows are PENDING; unchanged for longer than the threshold they are
    // stuck: CRITICAL, exit 6 (whatever --failed-threshold says).
    run_on(database, &["retry", "--all-failed", "--yes"]).expect_code(0);
    run_on(database, &["status", "--check"]).expect_code(0);
    let run = run_on(
        database,
        &[
            "status",
            "--check",
            "--stuck-threshold",
            "0s",
            "--failed-threshold",
            "99",
        ],
    )
    .expect_code(6);
    assert!(
        run.stdout.starts_with(&format!(
            "BANDEJA CRITICAL - stuck: {SEEDED} rows (inbox_events {SEEDED}) PENDING and \
             unchanged for longer than PT0S; FAILED: none, threshold 99;"
        )),
        "{run:#?}"
    );
    assert_eq!(
        run_on(
            database,
            &["status", "--check", "--stuck-threshold", "0s", "--json"]
        )
        .expect_code(6)
        .json()["state"],
        "CRITICAL"
    );

    // A usage error stays a usage error.
    run_on(database, &["status", "--failed-threshold", "1"]).expect_code(2);
    run_on(database, &["status", "--check", "--by-tenant"]).expect_code(2);
}

/// `replay` without any filter is refused, as `POST /replay` refuses it; `--all` says it
/// on purpose; any filter is enough.
fn assert_unfiltered_replay_is_refused(database: &[&str]) {
    for args in [&["replay", "--yes"][..], &["replay", "--dry-run"]] {
        let run = run_on(database, args).expect_code(2);
        assert!(
            run.stderr.contains("replay needs at least one filter"),
            "{run:#?}"
        );
        assert!(run.stderr.contains("`bandeja replay --all`"), "{run:#?}");
    }
    let completed = listed(
        database,
        &["--subscriber", SUCCEEDING, "--status", "completed"],
    );
    assert_eq!(completed.len(), SEEDED, "nothing was replayed");
    let dry = run_on(
        database,
        &["replay", "--box", "inbox_events", "--dry-run", "--json"],
    )
    .expect_code(0)
    .json();
    assert_eq!(dry["matched"], SEEDED);
    let all = run_on(database, &["replay", "--all", "--yes", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(
        (all["matched"].clone(), all["changed"].clone()),
        (SEEDED.into(), SEEDED.into())
    );
    assert_eq!(listed(database, &["--status", "pending"]).len(), SEEDED);
    assert!(listed(database, &["--status", "pending"])
        .iter()
        .all(|r| r["subscriber"] == SUCCEEDING));
}

#[test]
fn status_check_exits_0_5_or_6_on_sqlite() {
    let (db, _ids) = sqlite_filled(seed);
    assert_check_codes(&db.args());
    // An empty database is healthy.
    let dir = TempDir::new("bandeja-cli");
    let empty = dir.sqlite_url("empty.db");
    bandeja(&["migrate", "--database", &empty]).expect_code(0);
    let run = bandeja(&["status", "--check", "--database", &empty]).expect_code(0);
    assert!(
        run.stdout.starts_with(
            "BANDEJA OK - stuck: none, threshold PT5M; FAILED: none, threshold 0; 0 pending"
        ),
        "{run:#?}"
    );
    // An unreachable database is a runtime error, not a verdict.
    let missing = dir.sqlite_url("missing.db");
    bandeja(&["status", "--check", "--database", &missing]).expect_code(1);
}

#[test]
fn replay_without_a_filter_is_refused_on_sqlite() {
    let (db, _ids) = sqlite_filled(seed);
    assert_unfiltered_replay_is_refused(&db.args());
}

#[test]
fn status_check_and_the_replay_refusal_on_postgres() {
    for check in [
        assert_check_codes as fn(&[&str]),
        assert_unfiltered_replay_is_refused,
    ] {
        let Some((db, _ids)) = postgres_filled(seed) else {
            return;
        };
        check(&db.args());
    }
}
