//! `bandeja messages list` pages across the four boxes: a line after the table says how
//! many rows of how many are shown and prints the commands of the older and newer pages
//! (`--before` / `--after` a cursor); following them reaches every row exactly once, on
//! SQLite and on PostgreSQL. The JSON document carries `total`, `older` and `newer`.

mod common;

use bandeja_core::Store;
use common::databases::{postgres_filled, sqlite_filled};
use common::paging::{
    add_commands, assert_bad_cursors_are_usage_errors, assert_json_pages_reach_every_row,
    assert_text_pages_reach_every_row, COMMANDS,
};
use common::{listed, run_on, seed, SEEDED};

/// Rows in all: the seed's outbox and inbox event rows, plus the command rows.
const ROWS: usize = 3 * SEEDED + 2 * COMMANDS;

/// Seeds `store` (events, then commands) and closes nothing.
async fn fill<S: Store + bandeja_core::admin::Admin>(store: &S) {
    seed(store).await;
    add_commands(store).await;
}

/// The checks every store gets.
fn assert_paging(database: &[&str]) {
    let all = listed(database, &["--limit", "9999"]);
    assert_eq!(all.len(), ROWS);
    let boxes: std::collections::BTreeSet<&str> =
        all.iter().filter_map(|r| r["box"].as_str()).collect();
    assert_eq!(boxes.len(), 4, "the rows span the four boxes: {boxes:?}");

    // Everything fits: no line after the table.
    let run = run_on(database, &["messages", "list"]).expect_code(0);
    assert!(!run.stdout.contains("showing "), "{run:#?}");
    let document = run_on(database, &["messages", "list", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(document["total"], ROWS);
    assert!(document["older"].is_null() && document["newer"].is_null());

    // Truncated: the line says so, with the command of the next page.
    let run = run_on(database, &["messages", "list", "--limit", "3"]).expect_code(0);
    let last = run.stdout.lines().last().unwrap_or_default();
    let expected = format!(
        "showing 3 of {ROWS} (newest first); older: bandeja messages list --limit 3 --before o."
    );
    assert!(last.starts_with(&expected), "{last}");

    for limit in [2, 3] {
        assert_text_pages_reach_every_row(database, &[], limit);
    }
    assert_text_pages_reach_every_row(database, &["--status", "completed"], 2);
    assert_text_pages_reach_every_row(database, &["--type", "conformance.Ping"], 3);
    assert_json_pages_reach_every_row(database, 3);
    assert_bad_cursors_are_usage_errors(database);
}

#[test]
fn sqlite_pages_reach_every_row_across_the_four_boxes() {
    let (db, ()) = sqlite_filled(fill);
    assert_paging(&db.args());
}

#[test]
fn postgres_pages_reach_every_row_across_the_four_boxes() {
    let Some((db, ())) = postgres_filled(fill) else {
        return;
    };
    assert_paging(&db.args());
}
