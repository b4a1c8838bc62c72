//! `bandeja discard` moves FAILED rows into the archive tables with who and why (counted
//! and confirmed first); `messages show` still finds them, marked; `messages list
//! --archived` lists the archive; `purge --archive --older-than` prunes it. On SQLite and
//! PostgreSQL.

mod common;

use bandeja_core::MessageId;
use common::databases::{postgres_filled, sqlite_filled};
use common::{bandeja_with_env, field, listed, run_on, seed, FAILING, SEEDED};

/// The checks every store gets, on a seeded database: `ids` are the seeded messages, each
/// with one FAILED row (subscriber [`FAILING`]).
fn assert_discard(database: &[&str], ids: &[MessageId]) {
    let first = ids[0].to_string();
    // A reason is required; without a terminal, --yes is.
    let run = run_on(database, &["discard", &first]).expect_code(2);
    assert!(run.stderr.contains("--reason"), "{run:#?}");
    let run = run_on(database, &["discard", &first, "--reason", "poison"]).expect_code(4);
    assert!(
        run.stderr.contains("discard: 1 row (inbox_events 1) match"),
        "{run:#?}"
    );
    let run = run_on(database, &["discard", &first, "--reason", " ", "--yes"]).expect_code(2);
    assert!(
        run.stderr.contains("--reason must not be blank"),
        "{run:#?}"
    );
    let unknown = MessageId::new().to_string();
    run_on(database, &["discard", &unknown, "--reason", "x", "--yes"]).expect_code(3);
    let dry = run_on(
        database,
        &[
            "discard",
            "--all-failed",
            "--reason",
            "x",
            "--dry-run",
            "--json",
        ],
    )
    .expect_code(0)
    .json();
    assert_eq!(
        (dry["matched"].clone(), dry["changed"].clone()),
        (SEEDED.into(), 0.into())
    );
    assert_eq!(
        listed(database, &["--status", "failed"]).len(),
        SEEDED,
        "dry run"
    );

    // One message, by the default author.
    let run = bandeja_with_env(
        &[
            &[
                "discard",
                &first,
                "--reason",
                "poison: bad payload",
                "--yes",
            ][..],
            database,
        ]
        .concat(),
        &[
            ("USER", "ana"),
            ("HOSTNAME", "ops-1"),
            ("BANDEJA_LOG", "info"),
        ],
    )
    .expect_code(0);
    assert!(
        run.stdout
            .starts_with("discard: 1 row changed (moved to the archive"),
        "{run:#?}"
    );
    // The audit line: the action, the message, the operator.
    let audit = run
        .stderr
        .lines()
        .find(|l| l.contains("operator discarded from the command line"))
        .unwrap_or_else(|| panic!("no audit line: {run:#?}"));
    assert!(audit.contains("INFO"), "{audit}");
    assert!(audit.contains(&first), "{audit}");
    assert!(audit.contains("ana@ops-1"), "{audit}");
    assert_eq!(listed(database, &["--status", "failed"]).len(), SEEDED - 1);

    // `messages show` still finds it, marked, with who and why.
    let text = run_on(database, &["messages", "show", &first])
        .expect_code(0)
        .stdout;
    let archived = text
        .split("\n== ")
        .find(|part| part.contains("ARCHIVED"))
        .unwrap_or_else(|| panic!("an archived row:\n{text}"));
    assert!(
        archived.starts_with(&format!("inbox_events · subscriber {FAILING}")),
        "{text}"
    );
    for line in [
        "status         FAILED",
        "discarded by   ana@ops-1",
        "discard reason poison: bad payload",
    ] {
        assert!(archived.contains(line), "`{line}`:\n{text}");
    }
    assert!(archived.contains("archived at    ") && archived.contains("(in inbox_events_archive)"));
    // Its attempts, kept across the discard: one retried, then FAILED (max-retries 1).
    let attempts = text
        .split("failed attempts (oldest first)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("the attempts:\n{text}"));
    let lines: Vec<&str> = attempts.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("attempt 1  RETRIED  card declined"),
        "{text}"
    );
    assert!(
        lines[1].contains("attempt 2  FAILED  card declined"),
        "{text}"
    );
    assert!(lines
        .iter()
        .all(|l| l.contains(&format!("inbox_events ({FAILING})"))));
    let shown = run_on(database, &["messages", "show", &first, "--json"])
        .expect_code(0)
        .json();
    let rows = shown["rows"].as_array().expect("rows");
    let discarded: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| !r["archived_at"].is_null())
        .collect();
    assert_eq!(discarded.len(), 1, "{shown:#}");
    assert_eq!(
        shown["attempts"].as_array().map(Vec::len),
        Some(2),
        "{shown:#}"
    );
    assert_eq!(shown["attempts"][1]["outcome"], "FAILED");
    assert_eq!(discarded[0]["discarded_by"], "ana@ops-1");
    assert_eq!(discarded[0]["discard_reason"], "poison: bad payload");
    assert!(rows
        .iter()
        .filter(|r| r["archived_at"].is_null())
        .all(|r| r["discarded_by"].is_null()));

    // The rest by filter, with --by.
    let run = run_on(
        database,
        &[
            "discard",
            "--all-failed",
            "--subscriber",
            FAILING,
            "--reason",
            "cleanup",
            "--by",
            "bob",
            "--yes",
            "--json",
        ],
    )
    .expect_code(0)
    .json();
    assert_eq!(run["changed"], SEEDED - 1);
    assert!(listed(database, &["--status", "failed"]).is_empty());

    // The archive listing.
    let archive = listed(database, &["--archived"]);
    assert_eq!(archive.len(), SEEDED, "{archive:#?}");
    let mut by = field(&archive, "discarded_by");
    by.sort();
    assert_eq!(by, ["ana@ops-1", "bob", "bob"]);
    assert!(field(&archive, "status").iter().all(|s| s == "FAILED"));
    let text = run_on(database, &["messages", "list", "--archived"])
        .expect_code(0)
        .stdout;
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.ends_with("ARCHIVED              DISCARDED BY  REASON"),
        "{text}"
    );
    assert!(
        text.contains("poison: bad payload") && text.contains("cleanup"),
        "{text}"
    );
    let paged = run_on(
        database,
        &["messages", "list", "--archived", "--limit", "2"],
    )
    .expect_code(0);
    assert!(
        paged.stdout.contains(&format!(
            "showing 2 of {SEEDED} (newest first); older: bandeja messages list --archived --limit 2 --before o."
        )),
        "{paged:#?}"
    );
    // The rows in the boxes are not listed as archived, nor the archive in the boxes.
    assert_eq!(listed(database, &[]).len(), 3 * SEEDED - SEEDED);

    // Pruning the archive: counted, confirmed, then gone.
    let old = run_on(
        database,
        &["purge", "--archive", "--older-than", "1h", "--yes"],
    )
    .expect_code(0);
    assert!(
        old.stdout.contains("purge_archive: 0 rows changed") || old.stdout.contains("nothing"),
        "{old:#?}"
    );
    assert_eq!(
        listed(database, &["--archived"]).len(),
        SEEDED,
        "archived just now"
    );
    let refused = run_on(database, &["purge", "--archive", "--older-than", "0s"]).expect_code(4);
    assert!(
        refused
            .stderr
            .contains("purge_archive: 3 rows (inbox_events 3) match"),
        "{refused:#?}"
    );
    let run = run_on(
        database,
        &[
            "purge",
            "--archive",
            "--older-than",
            "0s",
            "--yes",
            "--json",
        ],
    )
    .expect_code(0)
    .json();
    assert_eq!(run["changed"], SEEDED, "{run:#}");
    assert!(listed(database, &["--archived"]).is_empty());
    run_on(database, &["messages", "show", &first]).expect_code(0);
    // The live rows are untouched by pruning the archive.
    assert_eq!(listed(database, &[]).len(), 2 * SEEDED);
}

#[test]
fn discard_archives_failed_rows_with_who_and_why_on_sqlite() {
    let (db, ids) = sqlite_filled(seed);
    assert_discard(&db.args(), &ids);
}

#[test]
fn discard_archives_failed_rows_with_who_and_why_on_postgres() {
    let Some((db, ids)) = postgres_filled(seed) else {
        return;
    };
    assert_discard(&db.args(), &ids);
}
