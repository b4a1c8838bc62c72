//! `bandeja subscribers` and `bandeja subscribers retire`, and the subscriptions in
//! `bandeja status`, as a process against real SQLite files and a PostgreSQL schema: the
//! listing with live processes and counts, the usage rules of retire (exactly one of
//! --discard and --keep, confirmation, --dry-run, did you mean), the refusal while a live
//! process runs the subscriber, and what discard and keep leave behind.

mod common;

use std::time::Duration;

use bandeja_conformance::fixtures::receive_events;
use bandeja_conformance::fixtures::Ping;
use bandeja_conformance::fixtures::TempDir;
use bandeja_core::subscriptions::{Registration, Subscription};
use bandeja_core::testing::eventually;
use bandeja_core::{Event, MessageKind, MessageRecord, Store, TenantId};
use bandeja_postgres::testing::database_url;
use bandeja_postgres::PgStore;
use bandeja_sqlite::SqliteStore;
use common::{bandeja, listed, run_on, runtime, seed, Run, FAILING, SEEDED, SUCCEEDING};
use serde_json::Value;

const PING: &str = "conformance.Ping";

/// Registers `process` as running `subscriber` for Ping events.
async fn register<S: Store>(store: &S, process: &str, subscriber: &str) {
    let subscriptions = [Subscription {
        kind: MessageKind::Event,
        message_type: PING.into(),
        subscriber: subscriber.into(),
        tenant: None,
    }];
    store
        .register(&Registration {
            process,
            service: "shop",
            host: "host-a",
            pid: 4242,
            subscriptions: &subscriptions,
        })
        .await
        .expect("register");
}

/// `n` Ping events received into the events inbox for `subscriber` (PENDING).
async fn receive<S: Store>(store: &S, subscriber: &str, n: u64) {
    let records: Vec<MessageRecord> = (0..n)
        .map(|i| {
            let mut record =
                MessageRecord::from_event(&Event::new("Ping", format!("r{i}"), Ping { n: i }))
                    .expect("a valid event");
            record.tenant_id = TenantId::default_tenant();
            record
        })
        .collect();
    let subscribers = [subscriber.to_owned()];
    receive_events(store, records.iter(), &subscribers).await;
}

/// A migrated SQLite file (by `bandeja migrate`).
fn sqlite_file(dir: &TempDir) -> String {
    let url = dir.sqlite_url("boxes.db");
    bandeja(&["migrate", "--database", &url]).expect_code(0);
    url
}

/// Runs `f` on a store of `url` (closed afterwards).
fn with_sqlite<T>(url: &str, f: impl AsyncFnOnce(&SqliteStore) -> T) -> T {
    runtime().block_on(async {
        let store = SqliteStore::connect(url).await.expect("open");
        let value = f(&store).await;
        store.pool().close().await;
        value
    })
}

fn entries(run: &Run) -> Vec<Value> {
    run.json()["subscriptions"]
        .as_array()
        .unwrap_or_else(|| panic!("no subscriptions array: {run:#?}"))
        .clone()
}

fn entry(run: &Run, subscriber: &str) -> Value {
    entries(run)
        .into_iter()
        .find(|s| s["subscriber"] == subscriber)
        .unwrap_or_else(|| panic!("no {subscriber}: {run:#?}"))
}

#[test]
fn subscribers_are_listed_and_retire_needs_a_choice_a_confirmation_and_no_live_process() {
    let dir = TempDir::new("bandeja-cli");
    let url = sqlite_file(&dir);
    with_sqlite(&url, async |store| {
        seed(store).await;
    });
    let db = ["--database", url.as_str()];

    let listing = run_on(&db, &["subscribers", "--json"]).expect_code(0);
    assert_eq!(listing.json()["live_for"], "PT30S");
    assert_eq!(entries(&listing).len(), 2, "{listing:#?}");
    let billing = entry(&listing, FAILING);
    assert_eq!(
        (&billing["pending"], &billing["failed"]),
        (&0.into(), &SEEDED.into())
    );
    assert_eq!(billing["state"], "idle", "the runtime that ran it stopped");
    assert_eq!(billing["type"], PING);
    assert_eq!(billing["kind"], "event");
    assert_eq!(entry(&listing, SUCCEEDING)["failed"], 0);
    let text = run_on(&db, &["subscribers"]).expect_code(0).stdout;
    let header = text.lines().next().unwrap_or_default();
    for column in [
        "KIND",
        "SUBSCRIBER",
        "LIVE PROCESSES",
        "PENDING",
        "FAILED",
        "STATE",
    ] {
        assert!(header.contains(column), "{column}:\n{text}");
    }
    let line = text
        .lines()
        .find(|l| l.contains(FAILING))
        .unwrap_or_else(|| panic!("no billing line:\n{text}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cells[..3], ["events", FAILING, PING], "{text}");
    assert_eq!(cells[cells.len() - 1], "idle", "{text}");

    // Exactly one of --discard and --keep.
    let neither = run_on(&db, &["subscribers", "retire", FAILING]).expect_code(2);
    assert!(
        neither.stderr.contains("--discard") && neither.stderr.contains("--keep"),
        "{neither:#?}"
    );
    let both = run_on(
        &db,
        &["subscribers", "retire", FAILING, "--discard", "--keep"],
    )
    .expect_code(2);
    assert!(both.stderr.contains("cannot be used with"), "{both:#?}");
    let kind = run_on(
        &db,
        &["subscribers", "retire", FAILING, "--keep", "--kind", "all"],
    )
    .expect_code(2);
    assert!(kind.stderr.contains("events"), "{kind:#?}");
    // Names.
    let typo = run_on(
        &db,
        &["subscribers", "retire", "biling", "--discard", "--yes"],
    )
    .expect_code(3);
    assert!(typo.stderr.contains("did you mean `billing`?"), "{typo:#?}");
    let rejected = run_on(
        &db,
        &[
            "subscribers",
            "retire",
            "bandeja.rejected",
            "--discard",
            "--yes",
        ],
    )
    .expect_code(2);
    assert!(
        rejected.stderr.contains("is not a subscription"),
        "{rejected:#?}"
    );
    // Not confirmed (stdin is not a terminal), then a dry run: nothing changes.
    let unconfirmed = run_on(&db, &["subscribers", "retire", FAILING, "--discard"]).expect_code(4);
    assert!(unconfirmed.stderr.contains("--yes"), "{unconfirmed:#?}");
    let plan = run_on(
        &db,
        &[
            "subscribers",
            "retire",
            FAILING,
            "--discard",
            "--dry-run",
            "--json",
        ],
    )
    .expect_code(0);
    let document = plan.json();
    assert_eq!(document["dry_run"], true);
    assert_eq!(document["failed"], SEEDED);
    assert_eq!(document["subscriptions"][0]["type"], PING, "{document:#}");
    assert_eq!(
        document["subscriptions"][0]["kind"], "event",
        "{document:#}"
    );
    assert!(plan.stderr.contains("deleted"), "{plan:#?}");
    assert_eq!(
        entries(&run_on(&db, &["subscribers", "--json"]).expect_code(0)).len(),
        2
    );
    assert_eq!(listed(&db, &["--subscriber", FAILING]).len(), SEEDED);

    // A live process runs it: refused, naming the process.
    with_sqlite(&url, async |store| {
        register(store, "web-1#0", FAILING).await
    });
    let listing = run_on(&db, &["subscribers", "--json"]).expect_code(0);
    let billing = entry(&listing, FAILING);
    assert_eq!(billing["state"], "running");
    assert_eq!(billing["processes"][0]["process"], "web-1#0");
    assert_eq!(billing["processes"][0]["pid"], 4242);
    let text = run_on(&db, &["subscribers"]).expect_code(0).stdout;
    assert!(text.contains("web-1#0 (host-a, pid 4242)"), "{text}");
    let refused = run_on(
        &db,
        &["subscribers", "retire", FAILING, "--discard", "--yes"],
    )
    .expect_code(1);
    assert!(
        refused.stderr.contains("web-1#0 on host-a (pid 4242")
            && refused.stderr.contains("stop them first"),
        "{refused:#?}"
    );
    assert_eq!(
        listed(&db, &["--subscriber", FAILING]).len(),
        SEEDED,
        "nothing changed"
    );

    // Stopped: retired; its FAILED rows go, its subscription too; audit is untouched.
    with_sqlite(&url, async |store| {
        store.unregister("web-1#0").await.expect("unregister")
    });
    let report = run_on(
        &db,
        &[
            "subscribers",
            "retire",
            FAILING,
            "--discard",
            "--yes",
            "--json",
        ],
    )
    .expect_code(0)
    .json();
    assert_eq!(report["discarded_failed"], SEEDED, "{report:#}");
    assert_eq!(report["subscriptions"][0]["type"], PING, "{report:#}");
    let listing = run_on(&db, &["subscribers", "--json"]).expect_code(0);
    let names: Vec<Value> = entries(&listing)
        .iter()
        .map(|s| s["subscriber"].clone())
        .collect();
    assert_eq!(names, [Value::from(SUCCEEDING)]);
    assert!(listed(&db, &["--subscriber", FAILING]).is_empty());
    assert_eq!(listed(&db, &["--subscriber", SUCCEEDING]).len(), SEEDED);
}

#[test]
fn status_names_an_unattended_subscription_and_retire_keep_fails_its_rows() {
    let dir = TempDir::new("bandeja-cli");
    let url = sqlite_file(&dir);
    with_sqlite(&url, async |store| {
        register(store, "old#0", "shipping").await;
        receive(store, "shipping", 2).await;
        store
            .unregister("old#0")
            .await
            .expect("the old version stops");
    });
    let db = ["--database", url.as_str()];

    let status = run_on(&db, &["status", "--json"]).expect_code(0).json();
    let waiting = &status["subscriptions"]["waiting"];
    assert_eq!(waiting[0]["subscriber"], "shipping", "{status:#}");
    assert_eq!(waiting[0]["pending"], 2, "{status:#}");
    assert_eq!(
        status["subscriptions"]["unattended"],
        Value::Array(Vec::new())
    );
    let text = run_on(&db, &["status"]).expect_code(0).stdout;
    assert!(text.contains("waiting: subscription `shipping`"), "{text}");

    let unattended = eventually(Duration::from_secs(20), || async {
        let status = run_on(&db, &["status", "--stuck-threshold", "50ms", "--json"])
            .expect_code(0)
            .json();
        let first = status["subscriptions"]["unattended"][0].clone();
        (first["subscriber"] == "shipping").then_some(first)
    });
    let unattended = runtime()
        .block_on(unattended)
        .expect("unattended once nobody refreshed it for longer than the threshold");
    let reason = unattended["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("2 pending row(s)") && reason.contains("events: conformance.Ping"),
        "{reason}"
    );
    let text = run_on(&db, &["status", "--stuck-threshold", "50ms"])
        .expect_code(0)
        .stdout;
    assert!(
        text.contains("UNATTENDED: subscription `shipping`"),
        "{text}"
    );
    let text = run_on(&db, &["subscribers", "--stuck-threshold", "50ms"])
        .expect_code(0)
        .stdout;
    assert!(
        text.contains("unattended: subscription `shipping`"),
        "{text}"
    );

    let done = run_on(
        &db,
        &[
            "subscribers",
            "retire",
            "shipping",
            "--keep",
            "--kind",
            "events",
            "--yes",
        ],
    )
    .expect_code(0);
    assert!(done.stdout.contains("2 row(s) marked FAILED"), "{done:#?}");
    let failed = listed(&db, &["--status", "failed", "--subscriber", "shipping"]);
    assert_eq!(failed.len(), 2);
    for row in &failed {
        let error = row["last_error"].as_str().unwrap_or_default();
        assert!(
            error.contains("subscription `shipping` retired by an operator"),
            "{row:#}"
        );
    }
    let status = run_on(&db, &["status", "--stuck-threshold", "50ms", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(
        status["subscriptions"]["unattended"],
        Value::Array(Vec::new()),
        "{status:#}"
    );
}

#[test]
fn postgres_lists_refuses_and_retires_with_discard() {
    let Some(schema) = runtime().block_on(bandeja_postgres::testing::fresh_schema("bandeja_cli"))
    else {
        return;
    };
    let url = database_url();
    let db = ["--database", url.as_str(), "--schema", schema.schema()];
    run_on(&db, &["migrate"]).expect_code(0);
    let store = || async {
        PgStore::connect_with_schema(&database_url(), schema.schema())
            .await
            .expect("connect")
    };
    runtime().block_on(async {
        let store = store().await;
        register(&store, "old#0", "shipping").await;
        receive(&store, "shipping", 3).await;
        store.pool().close().await;
    });
    let shipping = entry(
        &run_on(&db, &["subscribers", "--json"]).expect_code(0),
        "shipping",
    );
    assert_eq!(shipping["state"], "running");
    assert_eq!(shipping["pending"], 3);
    run_on(
        &db,
        &["subscribers", "retire", "shipping", "--discard", "--yes"],
    )
    .expect_code(1);

    runtime().block_on(async {
        let store = store().await;
        store.unregister("old#0").await.expect("unregister");
        store.pool().close().await;
    });
    let report = run_on(
        &db,
        &[
            "subscribers",
            "retire",
            "shipping",
            "--discard",
            "--yes",
            "--json",
        ],
    )
    .expect_code(0)
    .json();
    assert_eq!(report["discarded"], 3, "{report:#}");
    assert!(entries(&run_on(&db, &["subscribers", "--json"]).expect_code(0)).is_empty());
    assert!(listed(&db, &["--subscriber", "shipping"]).is_empty());
}
