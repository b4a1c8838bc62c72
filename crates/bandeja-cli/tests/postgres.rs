//! The `bandeja` binary against PostgreSQL, each test in a schema of its own (`--schema`),
//! dropped afterwards. Uses `DATABASE_URL`, or `postgres://postgres@127.0.0.1:5432/test`.
//! When PostgreSQL is unreachable the tests fail under `CI=true` and are skipped (with a
//! notice) otherwise.

mod common;

use bandeja_core::{MessageId, Store};
use bandeja_postgres::testing::{database_url, SchemaGuard};
use bandeja_postgres::PgStore;
use common::{
    assert_takeover_shown, bandeja, field, listed, run_on, runtime, seed, take_over_one, FAILING,
    FAILURE, SEEDED, SUCCEEDING,
};
use sqlx::{Connection, PgConnection, Row};

/// A fresh schema of this test's own, dropped with `CASCADE` when the guard goes; `None`
/// (after a notice) when PostgreSQL is unreachable outside CI. Panics in CI.
fn fresh_schema() -> Option<SchemaGuard> {
    runtime().block_on(bandeja_postgres::testing::fresh_schema("bandeja_cli"))
}

/// A migrated (by `bandeja migrate`), seeded schema.
struct Seeded {
    schema: SchemaGuard,
    url: String,
    ids: Vec<MessageId>,
}

impl Seeded {
    fn new() -> Option<Seeded> {
        let schema = fresh_schema()?;
        let run = bandeja(&[
            "migrate",
            "--database",
            &database_url(),
            "--schema",
            schema.schema(),
        ]);
        let run = run.expect_code(0);
        assert!(run.stdout.contains("migrations applied"), "{run:#?}");
        let ids = runtime().block_on(async {
            let store = PgStore::connect_with_schema(&database_url(), schema.schema())
                .await
                .expect("connect");
            store.migrate().await.expect("migrations are idempotent");
            let ids = seed(&store).await;
            store.pool().close().await;
            ids
        });
        Some(Seeded {
            schema,
            url: database_url(),
            ids,
        })
    }

    fn db(&self) -> [&str; 4] {
        ["--database", &self.url, "--schema", self.schema.schema()]
    }

    fn run(&self, args: &[&str]) -> common::Run {
        run_on(&self.db(), args)
    }

    fn list(&self, args: &[&str]) -> Vec<serde_json::Value> {
        listed(&self.db(), args)
    }

    fn archived(&self, table: &str) -> i64 {
        let sql = format!(
            "SELECT COUNT(*) AS n FROM \"{}\".{table}",
            self.schema.schema()
        );
        runtime().block_on(async {
            let mut conn = PgConnection::connect(&database_url())
                .await
                .expect("connect");
            let n = sqlx::query(&sql)
                .fetch_one(&mut conn)
                .await
                .expect("count the archive")
                .get::<i64, _>("n");
            let _ = conn.close().await;
            n
        })
    }
}

#[test]
fn status_list_and_show_read_a_postgres_schema() {
    let Some(db) = Seeded::new() else { return };
    let status = db.run(&["status", "--json"]).expect_code(0).json();
    let inbox = status["boxes"]
        .as_array()
        .expect("boxes")
        .iter()
        .find(|b| b["box"] == "inbox_events")
        .cloned()
        .expect("inbox_events");
    assert_eq!(inbox["failed"], SEEDED, "{status:#}");

    let failed = db.list(&["--status", "failed"]);
    assert_eq!(failed.len(), SEEDED);
    assert!(field(&failed, "subscriber").iter().all(|s| s == FAILING));
    assert!(field(&failed, "last_error")
        .iter()
        .all(|e| e.contains(FAILURE)));
    assert_eq!(
        db.list(&["--since", "1h", "--type", "conformance.Ping"])
            .len(),
        3 * SEEDED
    );

    let id = db.ids[2].to_string();
    let shown = db
        .run(&["messages", "show", &id, "--json"])
        .expect_code(0)
        .json();
    assert_eq!(shown["rows"].as_array().map(Vec::len), Some(3), "{shown:#}");
    assert!(shown["rows"][0]["payload"]["n"] == 2, "{shown:#}");
    let missing = MessageId::new().to_string();
    db.run(&["messages", "show", &missing]).expect_code(3);
}

#[test]
fn a_row_taken_over_shows_one_takeover_and_no_retry_in_a_postgres_schema() {
    let Some(db) = Seeded::new() else { return };
    let id = runtime().block_on(async {
        let store = PgStore::connect_with_schema(&db.url, db.schema.schema())
            .await
            .expect("connect");
        let id = take_over_one(&store).await;
        store.pool().close().await;
        id
    });
    assert_takeover_shown(&db.db(), id);
}

#[test]
fn retry_and_replay_send_rows_back_to_pending_in_a_postgres_schema() {
    let Some(db) = Seeded::new() else { return };
    let refused = db.run(&["retry", "--all-failed"]).expect_code(4);
    assert!(refused.stderr.contains("--yes"), "{refused:#?}");
    assert_eq!(db.list(&["--status", "failed"]).len(), SEEDED);

    let retried = db
        .run(&["retry", "--all-failed", "--yes", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(retried["changed"].as_u64(), Some(3), "{retried:#}");
    let pending = db.list(&["--status", "pending"]);
    assert_eq!(pending.len(), SEEDED);
    assert!(field(&pending, "subscriber").iter().all(|s| s == FAILING));
    assert!(field(&pending, "retry_count").iter().all(|n| n == "0"));
    assert!(field(&pending, "resubmitted_count")
        .iter()
        .all(|n| n == "1"));

    let replayed = db
        .run(&["replay", "--subscriber", SUCCEEDING, "--yes", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(replayed["changed"].as_u64(), Some(3), "{replayed:#}");
    assert_eq!(db.list(&["--status", "pending"]).len(), 2 * SEEDED);
    assert_eq!(db.list(&["--status", "completed"]).len(), SEEDED);
}

#[test]
fn replay_outbox_sends_rows_again_from_the_box_and_its_archive_in_a_postgres_schema() {
    let Some(db) = Seeded::new() else { return };
    let bare = db.run(&["replay", "--outbox", "--yes"]).expect_code(2);
    assert!(bare.stderr.contains("--all"), "{bare:#?}");
    let archived = db
        .run(&[
            "archive",
            "--older-than",
            "0s",
            "--box",
            "outbox_events",
            "--yes",
        ])
        .expect_code(0);
    assert!(archived.stdout.contains("3 rows changed"), "{archived:#?}");
    assert!(db.list(&["--box", "outbox_events"]).is_empty());

    let dry = db
        .run(&["replay", "--outbox", "--all", "--dry-run", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(dry["matched"].as_u64(), Some(3), "{dry:#}");
    let id = db.ids[1].to_string();
    let one = db
        .run(&["replay", "--outbox", "--id", &id, "--yes", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(one["changed"].as_u64(), Some(1), "{one:#}");
    assert_eq!(db.archived("outbox_events_archive"), 2);
    let back = db.list(&["--box", "outbox_events"]);
    assert_eq!(field(&back, "id"), [id]);
    assert_eq!(field(&back, "status"), ["PENDING"]);
    assert_eq!(field(&back, "resubmitted_count"), ["1"]);

    let rest = db
        .run(&[
            "replay",
            "--outbox",
            "--type",
            "conformance.Ping",
            "--yes",
            "--json",
        ])
        .expect_code(0)
        .json();
    assert_eq!(rest["changed"].as_u64(), Some(2), "{rest:#}");
    assert_eq!(db.archived("outbox_events_archive"), 0);
    let pending = db.list(&["--box", "outbox_events", "--status", "pending"]);
    assert_eq!(pending.len(), SEEDED);
    assert_eq!(
        db.list(&["--box", "inbox_events", "--status", "completed"])
            .len(),
        SEEDED
    );
}

#[test]
fn purge_and_archive_remove_old_completed_rows_from_a_postgres_schema() {
    let Some(db) = Seeded::new() else { return };
    let recent = db
        .run(&["purge", "--older-than", "1h", "--yes", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(recent["matched"].as_u64(), Some(0), "{recent:#}");

    let purged = db
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
    assert_eq!(purged["changed"].as_u64(), Some(3), "{purged:#}");
    assert!(db.list(&["--box", "outbox_events"]).is_empty());

    let archived = db
        .run(&["archive", "--older-than", "0s", "--yes", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(archived["changed"].as_u64(), Some(3), "{archived:#}");
    assert_eq!(db.archived("inbox_events_archive"), 3);
    assert_eq!(field(&db.list(&[]), "status"), ["FAILED"; 3]);
}

#[test]
fn an_unknown_schema_name_is_a_usage_error() {
    let Some(_schema) = fresh_schema() else {
        return;
    };
    let run = bandeja(&[
        "status",
        "--database",
        &database_url(),
        "--schema",
        "Bad-Name",
    ])
    .expect_code(2);
    assert!(run.stderr.contains("invalid schema name"), "{run:#?}");
}
