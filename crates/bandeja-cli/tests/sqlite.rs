//! The `bandeja` binary against real SQLite files: each test migrates a file of its own
//! with `bandeja migrate`, seeds it by running the bandeja runtime (three events, a
//! subscriber that fails and one that succeeds), then runs the commands as a process.

mod common;

use bandeja_conformance::fixtures::TempDir;
use bandeja_core::MessageId;
use bandeja_sqlite::SqliteStore;
use common::databases::{sqlite_filled, SqliteDatabase};
use common::{
    assert_takeover_shown, bandeja, field, listed, run_on, runtime, seed, take_over_one, FAILING,
    FAILURE, SEEDED, SUCCEEDING,
};
use sqlx::Row;

/// A migrated, seeded SQLite database.
struct Seeded {
    database: SqliteDatabase,
    ids: Vec<MessageId>,
}

impl Seeded {
    fn new() -> Seeded {
        let (database, ids) = sqlite_filled(seed);
        Seeded { database, ids }
    }

    fn db(&self) -> [&str; 2] {
        self.database.args()
    }

    /// `bandeja <args> --database <url>`.
    fn run(&self, args: &[&str]) -> common::Run {
        run_on(&self.db(), args)
    }

    fn list(&self, args: &[&str]) -> Vec<serde_json::Value> {
        listed(&self.db(), args)
    }

    /// Rows in an archive table, read with SQL.
    fn archived(&self, table: &str) -> i64 {
        runtime().block_on(async {
            let store = SqliteStore::connect(&self.database.url)
                .await
                .expect("open");
            let n = sqlx::query(&format!("SELECT COUNT(*) AS n FROM {table}"))
                .fetch_one(store.pool())
                .await
                .expect("count the archive")
                .get::<i64, _>("n");
            store.pool().close().await;
            n
        })
    }
}

#[test]
fn status_shows_the_counters_of_every_box() {
    let db = Seeded::new();
    let document = db.run(&["status", "--json"]).expect_code(0).json();
    let boxes = document["boxes"].as_array().expect("boxes");
    assert_eq!(boxes.len(), 4, "{document:#}");
    let inbox = boxes
        .iter()
        .find(|b| b["box"] == "inbox_events")
        .expect("inbox_events");
    assert_eq!(inbox["failed"], SEEDED);
    assert_eq!(inbox["pending"], 0);
    assert!(inbox["last_processed_at"].is_string(), "{inbox:#}");
    assert_eq!(document["stuck_threshold"], "PT5M");

    let text = db.run(&["status"]).expect_code(0).stdout;
    let inbox_line = text
        .lines()
        .find(|l| l.starts_with("inbox_events"))
        .unwrap_or_else(|| panic!("no inbox_events line:\n{text}"));
    let cells: Vec<&str> = inbox_line.split_whitespace().collect();
    assert_eq!(&cells[1..6], ["0", "0", "3", "0", "0"], "{text}");

    let by_tenant = db
        .run(&["status", "--by-tenant", "--json"])
        .expect_code(0)
        .json();
    let tenants: Vec<&serde_json::Value> = by_tenant["boxes"]
        .as_array()
        .expect("boxes")
        .iter()
        .filter(|b| b["box"] == "inbox_events")
        .collect();
    assert_eq!(tenants.len(), 1, "{by_tenant:#}");
    assert_eq!(tenants[0]["tenant"], "default");
    assert_eq!(tenants[0]["failed"], SEEDED);
}

#[test]
fn a_row_taken_over_shows_one_takeover_and_no_retry_in_list_show_and_status() {
    let db = Seeded::new();
    let id = runtime().block_on(async {
        let store = SqliteStore::connect(&db.database.url).await.expect("open");
        let id = take_over_one(&store).await;
        store.pool().close().await;
        id
    });
    assert_takeover_shown(&db.db(), id);
}

#[test]
fn messages_list_filters_by_status_subscriber_box_and_time() {
    let db = Seeded::new();
    let failed = db.list(&["--status", "failed"]);
    assert_eq!(failed.len(), SEEDED);
    assert!(field(&failed, "subscriber").iter().all(|s| s == FAILING));
    assert!(field(&failed, "status").iter().all(|s| s == "FAILED"));
    assert!(field(&failed, "last_error")
        .iter()
        .all(|e| e.contains(FAILURE)));
    assert!(field(&failed, "retry_count").iter().all(|n| n == "1"));

    let completed = db.list(&["--subscriber", SUCCEEDING, "--status", "COMPLETED"]);
    assert_eq!(completed.len(), SEEDED);
    let outbox = db.list(&["--box", "outbox_events"]);
    assert_eq!(outbox.len(), SEEDED);
    assert!(field(&outbox, "box").iter().all(|b| b == "outbox_events"));
    assert_eq!(db.list(&["--type", "conformance.Ping"]).len(), 3 * SEEDED);
    assert_eq!(db.list(&["--type", "other.Type"]).len(), 0);
    assert_eq!(
        db.list(&["--tenant", "default", "--since", "1h"]).len(),
        3 * SEEDED
    );
    assert_eq!(db.list(&["--until", "PT1H"]).len(), 0);
    assert_eq!(
        db.list(&["--since", "2000-01-01T00:00:00Z"]).len(),
        3 * SEEDED
    );
    assert_eq!(db.list(&["--limit", "2"]).len(), 2);

    let text = db
        .run(&["messages", "list", "--status", "failed"])
        .expect_code(0);
    assert!(text.stdout.starts_with("CREATED"), "{text:#?}");
    assert_eq!(text.stdout.matches(FAILURE).count(), SEEDED, "{text:#?}");

    let bad = db
        .run(&["messages", "list", "--status", "done"])
        .expect_code(2);
    assert!(bad.stderr.contains("unknown status"), "{bad:#?}");
    let bad = db
        .run(&["messages", "list", "--since", "yesterday"])
        .expect_code(2);
    assert!(bad.stderr.contains("RFC 3339"), "{bad:#?}");
}

#[test]
fn messages_list_by_correlation_shows_one_flow_across_boxes() {
    let db = Seeded::new();
    // Emitted without a correlation id, each seeded message starts its own flow, named by
    // its id: its outbox row and its inbox row per subscriber.
    let flow = db.ids[0].to_string();
    let rows = db.list(&["--correlation", &flow]);
    assert_eq!(rows.len(), 3, "{rows:#?}");
    assert!(field(&rows, "id").iter().all(|id| *id == flow), "{rows:#?}");
    let mut boxes = field(&rows, "box");
    boxes.sort();
    assert_eq!(boxes, ["inbox_events", "inbox_events", "outbox_events"]);
    assert!(db.list(&["--correlation", "no-such-flow"]).is_empty());
}

#[test]
fn messages_show_prints_every_row_of_the_message() {
    let db = Seeded::new();
    let id = db.ids[1].to_string();
    let document = db
        .run(&["messages", "show", &id, "--json"])
        .expect_code(0)
        .json();
    let rows = document["rows"].as_array().expect("rows");
    let places: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r["box"].to_string(), r["subscriber"].to_string()))
        .collect();
    assert_eq!(
        places,
        [
            ("\"outbox_events\"".into(), "null".into()),
            ("\"inbox_events\"".into(), "\"audit\"".into()),
            ("\"inbox_events\"".into(), "\"billing\"".into()),
        ]
    );
    assert!(rows.iter().all(|r| r["id"] == id.as_str()));
    assert!(rows.iter().all(|r| r["payload"]["n"] == 1), "{document:#}");
    assert!(rows[2]["last_error"]
        .as_str()
        .is_some_and(|e| e.contains(FAILURE)));

    let text = db.run(&["messages", "show", &id]).expect_code(0).stdout;
    assert_eq!(text.matches("== ").count(), 3, "{text}");
    assert!(
        text.contains("== inbox_events · subscriber billing"),
        "{text}"
    );
    assert!(text.contains("payload\n  {\n    \"n\": 1\n  }"), "{text}");
    assert!(text.contains(FAILURE), "{text}");
}

#[test]
fn an_unknown_message_id_exits_with_3() {
    let db = Seeded::new();
    let missing = MessageId::new().to_string();
    let show = db.run(&["messages", "show", &missing]).expect_code(3);
    assert!(show.stderr.contains(&missing), "{show:#?}");
    let retry = db.run(&["retry", &missing, "--yes"]).expect_code(3);
    assert!(retry.stderr.contains("no row"), "{retry:#?}");
    db.run(&["messages", "show", "not-a-uuid"]).expect_code(2);
}

#[test]
fn retry_all_failed_sends_the_rows_back_to_pending_with_a_zero_retry_count() {
    let db = Seeded::new();
    let dry = db
        .run(&["retry", "--all-failed", "--dry-run", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(
        (dry["matched"].as_u64(), dry["changed"].as_u64()),
        (Some(3), Some(0))
    );
    assert_eq!(db.list(&["--status", "failed"]).len(), SEEDED);

    let run = db.run(&["retry", "--all-failed", "--yes"]).expect_code(0);
    assert!(run.stdout.contains("retry: 3 rows changed"), "{run:#?}");
    assert!(
        run.stderr.contains("3 rows (inbox_events 3) match"),
        "{run:#?}"
    );
    assert!(db.list(&["--status", "failed"]).is_empty());
    let pending = db.list(&["--status", "pending"]);
    assert_eq!(pending.len(), SEEDED);
    assert!(field(&pending, "subscriber").iter().all(|s| s == FAILING));
    assert!(field(&pending, "retry_count").iter().all(|n| n == "0"));
    assert!(field(&pending, "resubmitted_count")
        .iter()
        .all(|n| n == "1"));

    let again = db.run(&["retry", "--all-failed", "--yes"]).expect_code(0);
    assert!(again.stdout.contains("nothing to do"), "{again:#?}");
}

#[test]
fn retry_of_one_message_needs_no_confirmation() {
    let db = Seeded::new();
    let id = db.ids[0].to_string();
    let run = db.run(&["retry", &id, "--json"]).expect_code(0).json();
    assert_eq!(
        (run["matched"].as_u64(), run["changed"].as_u64()),
        (Some(1), Some(1))
    );
    let pending = db.list(&["--status", "pending"]);
    assert_eq!(field(&pending, "id"), [id]);
}

#[test]
fn destructive_commands_refuse_without_yes_when_stdin_is_not_a_terminal() {
    let db = Seeded::new();
    for args in [
        &["retry", "--all-failed"][..],
        &["replay", "--subscriber", SUCCEEDING],
        &["purge", "--older-than", "0s"],
        &["archive", "--older-than", "0s"],
    ] {
        let run = db.run(args).expect_code(4);
        assert!(
            run.stderr.contains("stdin is not a terminal"),
            "{args:?}: {run:#?}"
        );
        assert!(run.stderr.contains("--yes"), "{args:?}: {run:#?}");
        assert!(run.stderr.contains("match"), "{args:?}: {run:#?}");
    }
    assert_eq!(db.list(&["--status", "failed"]).len(), SEEDED);
    assert_eq!(db.list(&["--status", "completed"]).len(), 2 * SEEDED);
}

#[test]
fn replay_sends_completed_inbox_rows_back_to_pending() {
    let db = Seeded::new();
    let run = db
        .run(&["replay", "--subscriber", SUCCEEDING, "--yes", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(
        (run["matched"].as_u64(), run["changed"].as_u64()),
        (Some(3), Some(3))
    );
    let pending = db.list(&["--status", "pending"]);
    assert_eq!(pending.len(), SEEDED);
    assert!(field(&pending, "subscriber")
        .iter()
        .all(|s| s == SUCCEEDING));
    // The outbox rows stay COMPLETED: replay only touches inboxes.
    assert_eq!(
        db.list(&["--box", "outbox_events", "--status", "completed"])
            .len(),
        SEEDED
    );
    let outbox = db
        .run(&["replay", "--box", "outbox_events", "--yes"])
        .expect_code(2);
    assert!(outbox.stderr.contains("inboxes"), "{outbox:#?}");
}

#[test]
fn replay_outbox_sends_completed_outbox_rows_again() {
    let db = Seeded::new();
    let unchanged = |db: &Seeded| {
        assert_eq!(
            db.list(&["--box", "outbox_events", "--status", "completed"])
                .len(),
            SEEDED
        );
    };
    let bare = db.run(&["replay", "--outbox", "--yes"]).expect_code(2);
    assert!(bare.stderr.contains("--all"), "{bare:#?}");
    let subscriber = db
        .run(&[
            "replay",
            "--outbox",
            "--subscriber",
            SUCCEEDING,
            "--all",
            "--yes",
        ])
        .expect_code(2);
    assert!(
        subscriber.stderr.contains("no subscriber"),
        "{subscriber:#?}"
    );
    let inbox = db
        .run(&[
            "replay",
            "--outbox",
            "--box",
            "inbox_events",
            "--all",
            "--yes",
        ])
        .expect_code(2);
    assert!(inbox.stderr.contains("not inbox_events"), "{inbox:#?}");
    db.run(&["replay", "--id", &db.ids[0].to_string()])
        .expect_code(2);
    let unconfirmed = db
        .run(&["replay", "--outbox", "--type", "conformance.Ping"])
        .expect_code(4);
    assert!(unconfirmed.stderr.contains("--yes"), "{unconfirmed:#?}");
    unchanged(&db);

    let dry = db
        .run(&[
            "replay",
            "--outbox",
            "--type",
            "conformance.Ping",
            "--dry-run",
            "--json",
        ])
        .expect_code(0);
    assert!(
        dry.stderr.contains("3 rows (outbox_events 3) match"),
        "{dry:#?}"
    );
    let dry = dry.json();
    assert_eq!(dry["action"], "replay_outbox", "{dry:#}");
    assert_eq!(
        (dry["matched"].as_u64(), dry["changed"].as_u64()),
        (Some(3), Some(0))
    );
    assert_eq!(dry["dry_run"], true);
    unchanged(&db);

    let id = db.ids[0].to_string();
    let one = db
        .run(&["replay", "--outbox", "--id", &id, "--yes", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(
        (one["matched"].as_u64(), one["changed"].as_u64()),
        (Some(1), Some(1))
    );
    let pending = db.list(&["--box", "outbox_events", "--status", "pending"]);
    assert_eq!(field(&pending, "id"), [id]);
    assert_eq!(field(&pending, "resubmitted_count"), ["1"]);
    assert_eq!(field(&pending, "completed_at"), ["null"]);

    let rest = db
        .run(&[
            "replay",
            "--outbox",
            "--type",
            "conformance.Ping",
            "--since",
            "1h",
            "--yes",
        ])
        .expect_code(0);
    assert!(
        rest.stdout.contains("replay_outbox: 2 rows changed"),
        "{rest:#?}"
    );
    assert!(rest.stdout.contains("absorb"), "{rest:#?}");
    assert_eq!(
        db.list(&["--box", "outbox_events", "--status", "pending"])
            .len(),
        SEEDED
    );
    let none = db
        .run(&["replay", "--outbox", "--type", "other.Type", "--yes"])
        .expect_code(0);
    assert!(none.stdout.contains("nothing to do"), "{none:#?}");
    assert!(
        none.stderr.contains("`delete` completion mode"),
        "{none:#?}"
    );
    // Inbox rows are not touched: the relay decides what each subscriber gets.
    assert_eq!(
        db.list(&["--box", "inbox_events", "--status", "completed"])
            .len(),
        SEEDED
    );
    assert_eq!(
        db.list(&["--box", "inbox_events", "--status", "failed"])
            .len(),
        SEEDED
    );
}

#[test]
fn purge_deletes_completed_rows_older_than_the_cutoff() {
    let db = Seeded::new();
    let recent = db
        .run(&["purge", "--older-than", "1h", "--yes"])
        .expect_code(0);
    assert!(recent.stdout.contains("nothing to do"), "{recent:#?}");
    assert_eq!(db.list(&["--status", "completed"]).len(), 2 * SEEDED);

    let run = db
        .run(&[
            "purge",
            "--older-than",
            "0s",
            "--box",
            "outbox_events",
            "--yes",
            "--json",
        ])
        .expect_code(0)
        .json();
    assert_eq!(
        (run["matched"].as_u64(), run["changed"].as_u64()),
        (Some(3), Some(3))
    );
    assert!(db.list(&["--box", "outbox_events"]).is_empty());
    assert_eq!(db.list(&["--box", "inbox_events"]).len(), 2 * SEEDED);

    let rest = db
        .run(&["purge", "--older-than", "PT0S", "--yes"])
        .expect_code(0);
    assert!(rest.stdout.contains("purge: 3 rows changed"), "{rest:#?}");
    // FAILED rows are never purged.
    assert_eq!(field(&db.list(&[]), "status"), ["FAILED"; 3]);
}

#[test]
fn archive_moves_completed_rows_into_the_archive_table() {
    let db = Seeded::new();
    let run = db
        .run(&[
            "archive",
            "--older-than",
            "0s",
            "--box",
            "inbox_events",
            "--yes",
        ])
        .expect_code(0);
    assert!(run.stdout.contains("archive: 3 rows changed"), "{run:#?}");
    assert_eq!(db.archived("inbox_events_archive"), 3);
    assert_eq!(db.archived("outbox_events_archive"), 0);
    let left = db.list(&["--box", "inbox_events"]);
    assert_eq!(field(&left, "status"), ["FAILED"; 3]);
}

#[test]
fn a_bad_database_is_a_clear_error() {
    let dir = TempDir::new("bandeja-cli");
    let missing = dir.sqlite_url("nope.db");
    let run = bandeja(&["status", "--database", &missing]).expect_code(1);
    assert!(run.stderr.contains("does not exist"), "{run:#?}");
    assert!(run.stderr.contains("bandeja migrate"), "{run:#?}");
    assert!(
        !dir.path().join("nope.db").exists(),
        "a read command created the file"
    );

    let unreachable = "postgres://postgres:secret@127.0.0.1:1/test";
    let run = bandeja(&["status", "--database", unreachable]).expect_code(1);
    assert!(run.stderr.contains("cannot open the database"), "{run:#?}");
    assert!(
        !run.stderr.contains("secret"),
        "the password leaked: {run:#?}"
    );

    let run = bandeja(&["status", "--database", "mysql://h/db"]).expect_code(2);
    assert!(run.stderr.contains("unsupported database URL"), "{run:#?}");
    let run = bandeja(&["status"]).expect_code(2);
    assert!(run.stderr.contains("DATABASE_URL"), "{run:#?}");

    let empty = dir.sqlite_url("empty.db");
    std::fs::write(dir.path().join("empty.db"), b"").expect("empty file");
    let run = bandeja(&["status", "--database", &empty]).expect_code(1);
    assert!(run.stderr.contains("bandeja migrate"), "{run:#?}");
}

#[test]
fn help_documents_the_exit_codes() {
    let run = bandeja(&["--help"]).expect_code(0);
    for code in [
        "0  success",
        "1  runtime",
        "2  usage",
        "3  not found",
        "4  aborted",
        "5  status --check: more FAILED rows",
        "6  status --check: stuck rows",
    ] {
        assert!(run.stdout.contains(code), "{code}: {run:#?}");
    }
}
