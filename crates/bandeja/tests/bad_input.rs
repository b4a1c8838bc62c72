//! Bad input at every door, against real stores: each attempt gets a clear error (what is
//! wrong and what to do) and writes nothing. "Nothing" is checked by reading every row of
//! the four boxes before and after, with the attempt's transaction committed anyway.
//!
//! The emission doors run on SQLite (a temporary file) and on PostgreSQL (a schema of
//! their own; `DATABASE_URL` or `postgres://postgres@127.0.0.1:5432/test`). When
//! PostgreSQL is unreachable its test fails under `CI=true` and is skipped with a notice
//! otherwise. The configuration doors need no database beyond checking that a refused
//! configuration starts nothing and writes nothing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja::admin::{Admin, MessageFilter, Page};
use bandeja::error::{BuildErrorKind, MessageErrorKind, StoreErrorKind};
use bandeja::prelude::*;
use bandeja::sqlite::SqliteStore;
use bandeja::store::{Inspect, RowView};
use bandeja::testing::eventually;
use bandeja::{BoxKind, ConfigError, ConfigErrorKind, Error, MessageId, MessageRecord, Outbox};
use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use bandeja_postgres::testing::SchemaGuard;
use bandeja_postgres::PgStore;

// ---------------------------------------------------------------------------------------
// Payloads, good and bad
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Note {
    text: String,
}
impl Payload for Note {
    const TYPE: &'static str = "bad_input.Note";
}

fn note(text: &str) -> Note {
    Note {
        text: text.to_owned(),
    }
}

/// A payload whose `Serialize` fails.
#[derive(Debug, Clone, serde::Deserialize)]
struct Refuses;
impl serde::Serialize for Refuses {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("this value cannot be written"))
    }
}
impl Payload for Refuses {
    const TYPE: &'static str = "bad_input.Refuses";
}

/// A map with non-string keys: JSON objects only have string keys.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Grid {
    cells: BTreeMap<(u8, u8), String>,
}
impl Payload for Grid {
    const TYPE: &'static str = "bad_input.Grid";
}

macro_rules! payload_named {
    ($name:ident, $type:expr) => {
        #[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
        struct $name {
            n: u32,
        }
        impl Payload for $name {
            const TYPE: &'static str = $type;
        }
    };
}
payload_named!(Nameless, "");
payload_named!(Blank, "   ");
payload_named!(TwoWords, "order placed");
payload_named!(Tabbed, "order\tplaced");
payload_named!(Multiline, "order\nplaced");

// ---------------------------------------------------------------------------------------
// The harness: snapshots of every box, and an attempt that must be refused
// ---------------------------------------------------------------------------------------

/// Every row of the four boxes.
async fn snapshot<S: Inspect>(store: &S) -> Vec<Vec<RowView>> {
    let mut boxes = Vec::new();
    for box_kind in BoxKind::ALL {
        boxes.push(store.rows(box_kind).await.expect("read the box"));
    }
    boxes
}

fn total(snapshot: &[Vec<RowView>]) -> usize {
    snapshot.iter().map(Vec::len).sum()
}

/// Runs `$attempt` (which may use `$conn`, an open transaction) and expects an error;
/// commits the transaction anyway, then checks that no box changed. Evaluates to the error.
macro_rules! refused {
    ($store:expr, |$conn:ident| $attempt:expr) => {{
        let store = $store;
        let before = snapshot(store).await;
        let mut tx = store.begin().await.expect("begin");
        let result = {
            let $conn = &mut *tx;
            $attempt.await
        };
        // Whatever the failed attempt could have written would be committed now.
        let _ = store.commit(tx).await;
        let error = result.expect_err(concat!("refused: ", stringify!($attempt)));
        let after = snapshot(store).await;
        assert_eq!(
            after,
            before,
            "`{}` changed the boxes ({} rows before, {} after): {error}",
            stringify!($attempt),
            total(&before),
            total(&after)
        );
        error
    }};
}

/// Asserts that the hint of `error` (what to do, shown apart from the message) contains
/// every fragment.
fn hints(error: &Error, fragments: &[&str]) {
    let hint = error.hint().unwrap_or_default();
    for fragment in fragments {
        assert!(
            hint.contains(fragment),
            "expected `{fragment}` in the hint of `{error}`: {hint}"
        );
    }
}

/// Asserts that `message` contains every fragment.
fn says(message: impl std::fmt::Display, fragments: &[&str]) {
    let message = message.to_string();
    for fragment in fragments {
        assert!(
            message.contains(fragment),
            "expected `{fragment}` in the message: {message}"
        );
    }
}

/// The error's text followed by its sources, as a program printing the chain shows it.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn tenant(id: &str) -> TenantId {
    TenantId::new(id).expect("a valid tenant id")
}

/// Quick workers, so the isolation check does not wait for the spec's polling intervals.
fn quick_config() -> Config {
    let mut config = Config::default();
    for group in BoxKind::ALL {
        config.group_mut(group).polling_initial_delay = Duration::ZERO;
        config.group_mut(group).polling_interval = Duration::from_millis(50);
    }
    config
}

/// Tenant ids made of SQL metacharacters, all valid: they are data.
const NASTY_TENANTS: [&str; 6] = [
    "x'; DROP TABLE outbox_events; --",
    "o'brien",
    "\" OR \"\"=\"",
    "' OR 1=1 --",
    "%",
    "_\\",
];

/// Records which tenants' events reached a subscriber.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(TenantId, String)>>>);

impl<S: Store> EventHandler<S, Note> for Seen {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Note>,
    ) -> Result<(), HandlerError> {
        self.0
            .lock()
            .expect("lock")
            .push((event.tenant_id, event.payload.text));
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// The emission doors, the same on every store
// ---------------------------------------------------------------------------------------

async fn every_emission_door<S: Admin>(store: S) {
    let bandeja = Bandeja::builder(store.clone()).build().expect("build");
    let outbox = bandeja.outbox();

    unserializable_payloads(&store, &outbox, &bandeja).await;
    oversized_payloads(&store, &outbox, &bandeja).await;
    unusable_type_names(&store, &outbox, &bandeja).await;
    events_and_commands_missing_what_they_need(&store, &outbox).await;
    text_no_database_can_store(&store, &outbox).await;
    duplicate_ids(&store, &outbox, &bandeja).await;
    tenant_ids_with_sql_metacharacters(&store, &outbox).await;
}

async fn unserializable_payloads<S: Admin>(store: &S, outbox: &Outbox<S>, bandeja: &Bandeja<S>) {
    let refuses = Event::new("Thing", "1", Refuses);
    let error = refused!(store, |conn| outbox.emit(conn, &refuses));
    assert!(matches!(error, Error::Serialize(_)), "{error:?}");
    says(
        chain(&error),
        &[
            "cannot serialize the payload of `bad_input.Refuses`",
            "this value cannot be written",
        ],
    );
    let error = refused!(store, |_conn| bandeja.emit(&refuses));
    assert!(matches!(error, Error::Serialize(_)), "{error:?}");

    let grid = Grid {
        cells: BTreeMap::from([((0, 0), "x".to_owned())]),
    };
    let error = refused!(store, |conn| outbox
        .emit(conn, &Event::new("Board", "1", grid.clone())));
    says(
        chain(&error),
        &[
            "cannot serialize the payload of `bad_input.Grid`",
            "key must be a string",
        ],
    );
    let command = bandeja::tenant::scope(tenant("acme"), async {
        Command::to_self("billing", grid.clone()).expect("in a tenant scope")
    })
    .await;
    let error = refused!(store, |conn| outbox.send(conn, &command));
    assert!(matches!(error, Error::Serialize(_)), "{error:?}");
    let error = refused!(store, |_conn| bandeja.send(&command));
    assert!(matches!(error, Error::Serialize(_)), "{error:?}");

    // An aggregate refuses to record it, before anything reaches a transaction.
    let mut recorded = RecordedEvents::default();
    let error = recorded
        .record(Event::inceptive("Board", grid))
        .expect_err("refused when recorded");
    assert!(matches!(error, Error::Serialize(_)), "{error:?}");
    assert!(recorded.is_empty());
}

async fn oversized_payloads<S: Admin>(store: &S, outbox: &Outbox<S>, bandeja: &Bandeja<S>) {
    // `{"text":"…"}` is 11 bytes around the text.
    let limited = Bandeja::builder(store.clone())
        .max_payload_bytes(64)
        .build()
        .expect("build")
        .outbox();
    let over = Event::new("Thing", "1", note(&"x".repeat(54)));
    let error = refused!(store, |conn| limited.emit(conn, &over));
    assert!(
        matches!(&error, Error::Message(e) if e.kind() == MessageErrorKind::TooLarge
            && e.id() == over.id && e.message_type() == "bad_input.Note"),
        "{error:?}"
    );
    says(
        &error,
        &["payload of `bad_input.Note` is 65 bytes, over the limit of 64"],
    );
    hints(
        &error,
        &[
            "store large data elsewhere and send a reference",
            "BandejaBuilder::max_payload_bytes",
        ],
    );

    // The default limit (1 MiB) holds on every path into the outbox.
    let huge = Event::new("Thing", "1", note(&"x".repeat(1024 * 1024)));
    let error = refused!(store, |conn| outbox.emit(conn, &huge));
    says(&error, &["over the limit of 1048576"]);
    let error = refused!(store, |_conn| bandeja.emit(&huge));
    says(&error, &["over the limit of 1048576"]);
    let records = vec![
        MessageRecord::from_event(&Event::new("Thing", "1", note("small"))).expect("record"),
        MessageRecord::from_event(&huge).expect("record"),
    ];
    let error = refused!(store, |conn| outbox.emit_records(conn, records.clone()));
    says(&error, &["over the limit"]);

    // Exactly at the limit is accepted.
    let at = Event::new("Thing", "1", note(&"x".repeat(53)));
    let mut tx = store.begin().await.expect("begin");
    limited
        .emit(&mut *tx, &at)
        .await
        .expect("64 bytes fit a 64-byte limit");
    drop(tx); // rolled back
}

async fn unusable_type_names<S: Admin>(store: &S, outbox: &Outbox<S>, bandeja: &Bandeja<S>) {
    let fix = "set `Payload::TYPE` to a stable name";
    let error = refused!(store, |conn| outbox
        .emit(conn, &Event::new("T", "1", Nameless { n: 1 })));
    assert!(
        matches!(&error, Error::Message(e) if e.kind() == MessageErrorKind::InvalidType),
        "{error:?}"
    );
    says(&error, &["message type `` is not usable"]);
    hints(&error, &[fix]);
    let error = refused!(store, |_conn| bandeja.emit(&Event::new(
        "T",
        "1",
        Nameless { n: 1 }
    )));
    says(&error, &["message type `` is not usable"]);
    let error = refused!(store, |conn| outbox
        .emit(conn, &Event::new("T", "1", Blank { n: 1 })));
    says(&error, &["message type `   ` is not usable"]);
    hints(&error, &[fix]);
    let error = refused!(store, |conn| outbox
        .emit(conn, &Event::new("T", "1", TwoWords { n: 1 })));
    says(&error, &["message type `order placed` is not usable"]);
    hints(&error, &[fix]);
    let error = refused!(store, |conn| outbox
        .emit(conn, &Event::new("T", "1", Tabbed { n: 1 })));
    says(&error, &["is not usable"]);
    hints(&error, &[fix]);
    let error = refused!(store, |conn| outbox
        .emit(conn, &Event::new("T", "1", Multiline { n: 1 })));
    says(&error, &["is not usable"]);
    hints(&error, &[fix]);

    // The envelope's fields are public: a type name changed by hand is checked too.
    let mut renamed = Event::new("T", "1", note("n"));
    renamed.event_type = "x".repeat(256);
    let error = refused!(store, |conn| outbox.emit(conn, &renamed));
    says(&error, &["is not usable"]);
    hints(&error, &["1 to 255"]);
    let mut command = bandeja::tenant::scope(tenant("acme"), async {
        Command::to_self("billing", note("n")).expect("in a tenant scope")
    })
    .await;
    command.command_type = String::new();
    let error = refused!(store, |conn| outbox.send(conn, &command));
    says(&error, &["message type `` is not usable"]);
    hints(&error, &[fix]);

    // A subscriber for such a type is refused at build time.
    let error = Bandeja::builder(store.clone())
        .on_event::<Nameless, _>("audit", NamelessHandler)
        .build()
        .err()
        .expect("refused at build");
    assert!(
        matches!(&error, Error::Build(e) if e.kind() == BuildErrorKind::MessageType
            && e.subscriber() == Some("audit")),
        "{error:?}"
    );
    says(&error, &["message type `` is not usable"]);
    hints(&error, &[fix]);
}

struct NamelessHandler;
impl<S: Store> EventHandler<S, Nameless> for NamelessHandler {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        _event: Event<Nameless>,
    ) -> Result<(), HandlerError> {
        Ok(())
    }
}

async fn events_and_commands_missing_what_they_need<S: Admin>(store: &S, outbox: &Outbox<S>) {
    // An event created before its aggregate has an id, never hydrated.
    let inceptive = Event::inceptive("Order", note("n"));
    let error = refused!(store, |conn| outbox.emit(conn, &inceptive));
    assert!(
        matches!(&error, Error::Message(e) if e.kind() == MessageErrorKind::MissingAggregateId
            && e.id() == inceptive.id),
        "{error:?}"
    );
    says(&error, &["has no aggregate id"]);
    hints(&error, &["hydrate it after inserting the aggregate"]);

    // A command outside any tenant scope: refused when it is created.
    let error = Command::to_self("billing", note("n")).expect_err("no tenant in context");
    assert!(matches!(error, Error::NoTenant), "{error:?}");
    says(&error, &["no tenant in context"]);
    hints(&error, &["bandeja::tenant::scope"]);
    let error = Command::to(tenant("globex"), "billing", note("n")).expect_err("no tenant");
    assert!(matches!(error, Error::NoTenant), "{error:?}");

    // A command without a usable target service.
    for service in ["", "   "] {
        let command = bandeja::tenant::scope(tenant("acme"), async {
            Command::to(tenant("globex"), service, note("n")).expect("in a tenant scope")
        })
        .await;
        let error = refused!(store, |conn| outbox.send(conn, &command));
        says(&error, &["has an empty target service"]);
        hints(&error, &["name the service that must handle it"]);
    }
    for service in ["bill ing", "billing\n", &"b".repeat(129)] {
        let command = bandeja::tenant::scope(tenant("acme"), async {
            Command::to_self(service, note("n")).expect("in a tenant scope")
        })
        .await;
        let error = refused!(store, |conn| outbox.send(conn, &command));
        assert!(
            matches!(&error, Error::Message(e) if e.kind() == MessageErrorKind::InvalidTargetService),
            "{error:?}"
        );
        says(&error, &["target service name"]);
        hints(&error, &["1 to 128 characters without spaces"]);
    }

    // Tenant ids that cannot be stored are refused when they are made.
    for id in ["", "acme\n", "ac\u{0}me", &"t".repeat(129)] {
        let error = TenantId::new(id).expect_err("refused");
        assert!(matches!(error, Error::InvalidTenant(_)), "{error:?}");
        says(&error, &["invalid tenant id"]);
        hints(
            &error,
            &["1 to 128 bytes of text without control characters"],
        );
    }
}

async fn text_no_database_can_store<S: Admin>(store: &S, outbox: &Outbox<S>) {
    // NUL characters: PostgreSQL text and JSONB cannot hold them, so no store takes them.
    let fix = "NUL character";
    let error = refused!(store, |conn| outbox
        .emit(conn, &Event::new("Order", "4\u{0}2", note("n"))));
    says(&error, &["aggregate id", fix]);
    let error = refused!(store, |conn| outbox
        .emit(conn, &Event::new("Or\u{0}der", "42", note("n"))));
    says(&error, &["aggregate type", fix]);
    let error = refused!(store, |conn| outbox.emit(
        conn,
        &Event::new("Order", "42", note("n")).with_partition_key("k\u{0}")
    ));
    says(&error, &["partition key", fix]);
    let error = refused!(store, |conn| outbox.emit(
        conn,
        &Event::new("Order", "42", note("n")).with_correlation_id("c\u{0}")
    ));
    says(&error, &["correlation id", fix]);
    let error = refused!(store, |conn| outbox.emit(
        conn,
        &Event::new("Order", "42", note("n")).with_header("x-app", "v\u{0}")
    ));
    says(&error, &["header `x-app`", fix]);
    let error = refused!(store, |conn| outbox.emit(
        conn,
        &Event::new("Order", "42", note("n")).with_header("x\u{0}", "v")
    ));
    says(&error, &["header", fix]);
    let error = refused!(store, |conn| outbox
        .emit(conn, &Event::new("Order", "42", note("a\u{0}b"))));
    says(&error, &["payload of `bad_input.Note`", fix]);
    let command = bandeja::tenant::scope(tenant("acme"), async {
        Command::to_self("billing", note("n")).expect("in a tenant scope")
    })
    .await;
    let error = refused!(store, |conn| outbox
        .send(conn, &command.clone().with_partition_key("\u{0}")));
    says(&error, &["partition key", fix]);

    // A backslash followed by `u0000` is ordinary text, not a NUL.
    let mut tx = store.begin().await.expect("begin");
    outbox
        .emit(&mut *tx, &Event::new("Order", "42", note("C:\\u0000\\dir")))
        .await
        .expect("an escaped backslash is not a NUL");
    drop(tx); // rolled back
}

async fn duplicate_ids<S: Admin>(store: &S, outbox: &Outbox<S>, bandeja: &Bandeja<S>) {
    let first = Event::new("Order", "dup", note("the original"));
    let mut tx = store.begin().await.expect("begin");
    outbox.emit(&mut *tx, &first).await.expect("emit");
    store.commit(tx).await.expect("commit");
    let before = snapshot(store).await;
    let original: Vec<RowView> = before[0]
        .iter()
        .filter(|row| row.message.record.id == first.id)
        .cloned()
        .collect();
    assert_eq!(original.len(), 1);

    // The same id again (with another payload, so a silent overwrite would show).
    let mut again = Event::new("Order", "dup", note("an impostor"));
    again.id = first.id;
    let error = refused!(store, |conn| outbox.emit(conn, &again));
    match &error {
        Error::Store(e) => assert_eq!(e.kind(), StoreErrorKind::Duplicate, "{error}"),
        other => panic!("expected a Duplicate store error, got {other:?}"),
    }
    says(
        &error,
        &[
            &format!("message id {} is already in outbox_events", first.id),
            "give every message a fresh id",
        ],
    );
    // Through the runtime's own transaction too.
    let error = refused!(store, |_conn| bandeja.emit(&again));
    match &error {
        Error::Store(e) => assert_eq!(e.kind(), StoreErrorKind::Duplicate, "{error}"),
        other => panic!("expected a Duplicate store error, got {other:?}"),
    }
    assert_eq!(snapshot(store).await, before, "the first row is untouched");

    // The same id twice in one batch: refused before the database is asked.
    let record = MessageRecord::from_event(&Event::new("Order", "b", note("n"))).expect("record");
    let error = refused!(store, |conn| outbox
        .emit_records(conn, vec![record.clone(), record.clone()]));
    assert!(
        matches!(&error, Error::Message(e) if e.kind() == MessageErrorKind::RepeatedId
            && e.id() == record.id),
        "{error:?}"
    );
    says(
        &error,
        &[&format!("message id {} appears twice", record.id)],
    );
    hints(&error, &["give every message a fresh id"]);

    // A command id already in the outbox of commands.
    let command = bandeja::tenant::scope(tenant("acme"), async {
        Command::to_self("billing", note("n")).expect("in a tenant scope")
    })
    .await;
    let mut tx = store.begin().await.expect("begin");
    outbox.send(&mut *tx, &command).await.expect("send");
    store.commit(tx).await.expect("commit");
    let error = refused!(store, |conn| outbox.send(conn, &command));
    says(
        &error,
        &[&format!(
            "message id {} is already in outbox_commands",
            command.id
        )],
    );
}

async fn tenant_ids_with_sql_metacharacters<S: Admin>(store: &S, outbox: &Outbox<S>) {
    let before = snapshot(store).await;
    let mut tx = store.begin().await.expect("begin");
    let mut ids = BTreeMap::new();
    // `initech`: a plain tenant no other check of this file writes for.
    for (n, id) in NASTY_TENANTS.iter().chain(&["initech"]).enumerate() {
        let event = Event::new("Order", n.to_string(), note(id)).with_tenant(tenant(id));
        ids.insert(*id, event.id);
        outbox
            .emit(&mut *tx, &event)
            .await
            .expect("valid tenant ids are data");
    }
    store.commit(tx).await.expect("commit");

    // Stored verbatim: every tenant's row is there, with its id as written.
    let after = snapshot(store).await;
    assert_eq!(
        total(&after),
        total(&before) + NASTY_TENANTS.len() + 1,
        "no table dropped, no row lost"
    );
    for (id, message) in &ids {
        let rows: Vec<_> = after[0]
            .iter()
            .filter(|r| r.message.record.id == *message)
            .collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].message.record.tenant_id.as_str(), *id);
    }

    // Isolated: a filter on one tenant finds that tenant's row only; operator actions on
    // it change nothing of anybody else's.
    for (id, message) in &ids {
        let filter = MessageFilter {
            tenant: Some((*id).to_owned()),
            ..MessageFilter::default()
        };
        let found = store
            .list(
                &filter,
                Page {
                    limit: 100,
                    before_seq: None,
                    after_seq: None,
                },
            )
            .await
            .expect("list");
        let found: Vec<MessageId> = found.iter().map(|v| v.message.record.id).collect();
        assert_eq!(found, vec![*message], "tenant {id:?}");
        assert_eq!(
            store.retry(&filter).await.expect("retry"),
            0,
            "nothing FAILED"
        );
        assert_eq!(
            store.replay(&filter).await.expect("replay"),
            0,
            "nothing COMPLETED"
        );
    }
    assert_eq!(
        snapshot(store).await,
        after,
        "operator filters changed nothing"
    );

    // A handler scoped to a tenant made of metacharacters sees its tenant's message only.
    let nasty = tenant(NASTY_TENANTS[0]);
    let seen = Seen::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(quick_config())
        .on_event_for_tenant::<Note, _>("scoped", nasty.clone(), seen.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    eventually(Duration::from_secs(20), || async {
        let done = store.rows(BoxKind::OutboxEvents).await.ok()?;
        done.iter()
            .all(|r| {
                r.message.status != MessageStatus::Pending
                    && r.message.status != MessageStatus::Processing
            })
            .then_some(())
    })
    .await
    .expect("the outbox drains");
    eventually(Duration::from_secs(20), || async {
        (!seen.0.lock().expect("lock").is_empty()).then_some(())
    })
    .await
    .expect("the scoped subscriber gets its message");
    running.shutdown().await;
    let seen = seen.0.lock().expect("lock").clone();
    assert_eq!(seen, vec![(nasty, NASTY_TENANTS[0].to_owned())]);
    let inbox = store.rows(BoxKind::InboxEvents).await.expect("rows");
    assert!(inbox
        .iter()
        .all(|r| r.message.record.tenant_id.as_str() == NASTY_TENANTS[0]));
}

/// A payload whose handler emits what no store can hold.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Relay {
    text: String,
}
impl Payload for Relay {
    const TYPE: &'static str = "bad_input.Relay";
}

/// Emits events with a NUL character (in the payload, in the aggregate type) and one id
/// twice, keeps the kinds of the errors it gets, and fails with the first of them.
#[derive(Clone, Default)]
struct NulEmitter(Arc<Mutex<Vec<MessageErrorKind>>>);

impl<S: Store> EventHandler<S, Relay> for NulEmitter {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        _event: Event<Relay>,
    ) -> Result<(), HandlerError> {
        let mut kinds = Vec::new();
        let mut first = None;
        let repeated = Event::new("Order", "42", note("once"));
        ctx.emit(repeated.clone()).expect("a storable event");
        for attempt in [
            ctx.emit(Event::new("Order", "42", note("a\u{0}b"))),
            ctx.emit(Event::new("Or\u{0}der", "42", note("n"))),
            ctx.emit(repeated),
        ] {
            let error = attempt.expect_err("refused at the emit");
            if let Error::Message(e) = &error {
                kinds.push(e.kind());
            }
            first.get_or_insert(error);
        }
        self.0.lock().expect("lock").extend(kinds);
        Err(HandlerError::permanent(first.expect("an error")))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_emitting_a_nul_character_gets_a_nul_character_error_on_sqlite() {
    let (store, _guard) = sqlite_store().await;
    let kinds = NulEmitter::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(quick_config())
        .on_event::<Relay, _>("relay", kinds.clone())
        .build()
        .expect("build");
    let trigger = Event::new(
        "Relay",
        "1",
        Relay {
            text: "go".to_owned(),
        },
    );
    let running = bandeja.start().await.expect("start");
    bandeja.emit(&trigger).await.expect("emit the trigger");
    let failed = eventually(Duration::from_secs(20), || async {
        let rows = store.rows(BoxKind::InboxEvents).await.expect("inbox rows");
        rows.into_iter()
            .find(|r| {
                r.message.record.id == trigger.id && r.message.status == MessageStatus::Failed
            })
            .map(|r| r.message)
    })
    .await
    .expect("the handler's attempt fails");
    running.shutdown().await;

    assert_eq!(
        *kinds.0.lock().expect("lock"),
        vec![
            MessageErrorKind::NulCharacter,
            MessageErrorKind::NulCharacter,
            MessageErrorKind::RepeatedId,
        ]
    );
    // The attempt failed with the NUL error, not with an opaque store error.
    let reason = failed.last_error.expect("the attempt's error");
    says(&reason, &["payload of `bad_input.Note`", "NUL character"]);
    // Nothing the handler emitted was written: the outbox holds the trigger only.
    let outbox = store.rows(BoxKind::OutboxEvents).await.expect("rows");
    let ids: Vec<MessageId> = outbox.iter().map(|r| r.message.record.id).collect();
    assert_eq!(ids, vec![trigger.id]);
}

// ---------------------------------------------------------------------------------------
// Stores
// ---------------------------------------------------------------------------------------

async fn sqlite_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-bad-input", SqliteStore::connect).await
}

/// A migrated store in a fresh schema, or `None` (after a notice) when PostgreSQL is
/// unreachable outside CI. Panics in CI.
async fn postgres_store() -> Option<(PgStore, SchemaGuard)> {
    bandeja_postgres::testing::fresh_store("bandeja_bad_input").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_emission_door_refuses_bad_input_and_writes_nothing_on_sqlite() {
    let (store, _guard) = sqlite_store().await;
    every_emission_door(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_emission_door_refuses_bad_input_and_writes_nothing_on_postgres() {
    let Some((store, _schema)) = postgres_store().await else {
        return;
    };
    every_emission_door(store).await;
}

// ---------------------------------------------------------------------------------------
// The configuration doors
// ---------------------------------------------------------------------------------------

fn toml_error(text: &str) -> ConfigError {
    Config::from_toml_str(text).expect_err(text)
}

fn env_error(vars: &[(&str, &str)]) -> ConfigError {
    let vars = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
    Config::default().apply_env(vars).expect_err("refused")
}

fn key_of(error: &ConfigError) -> &str {
    match error.kind() {
        ConfigErrorKind::UnknownKey | ConfigErrorKind::InvalidValue => {
            error.key().unwrap_or_default()
        }
        _ => panic!("expected an error naming a key, got {error:?}"),
    }
}

#[test]
fn unknown_configuration_keys_are_named_with_a_suggestion() {
    let error = toml_error("[events.outbox]\nbatch-sise = 5\n");
    assert_eq!(error.kind(), ConfigErrorKind::UnknownKey, "{error:?}");
    assert_eq!(key_of(&error), "events.outbox.batch-sise");
    says(
        &error,
        &[
            "unknown configuration key `events.outbox.batch-sise`",
            "did you mean `events.outbox.batch-size`?",
        ],
    );

    let error = toml_error("stuck-treshold = \"PT5M\"\n");
    assert_eq!(key_of(&error), "stuck-treshold");
    says(&error, &["did you mean `stuck-threshold`?"]);

    let error = toml_error("[events.outbox]\nbatch-size = 10\n[events.outbox.extra]\nx = 1\n");
    assert_eq!(key_of(&error), "events.outbox.extra");
    says(error.full_message(), &["expected one of", "`batch-size`"]);

    let error = toml_error("[events.outbx]\nbatch-size = 10\n");
    assert_eq!(key_of(&error), "events.outbx");
    says(&error, &["did you mean `events.outbox`?"]);

    let error = toml_error("\"'; DROP TABLE outbox_events; --\" = 1\n");
    assert_eq!(key_of(&error), "\"'; DROP TABLE outbox_events; --\"");

    let error = env_error(&[("BANDEJA_EVENTS_OUTBOX_BATCH_SIZ", "10")]);
    assert_eq!(key_of(&error), "BANDEJA_EVENTS_OUTBOX_BATCH_SIZ");
    says(
        &error,
        &["did you mean `BANDEJA_EVENTS_OUTBOX_BATCH_SIZE`?"],
    );
    let error = env_error(&[("BANDEJA_POLLING_INTERVAL", "5s")]);
    says(
        error.full_message(),
        &[
            "unknown configuration key `BANDEJA_POLLING_INTERVAL`",
            "expected one of",
        ],
    );
}

#[test]
fn negative_and_malformed_durations_are_named() {
    let error = toml_error("[events.outbox]\npolling-interval = \"-5s\"\n");
    assert_eq!(key_of(&error), "events.outbox.polling-interval");
    says(
        &error,
        &["invalid value `-5s`", "durations cannot be negative"],
    );
    let error = toml_error("[commands.inbox]\nlock-at-most-for = \"PT-20S\"\n");
    assert_eq!(key_of(&error), "commands.inbox.lock-at-most-for");
    says(&error, &["durations cannot be negative"]);
    let error = toml_error("stuck-threshold = \"soon\"\n");
    assert_eq!(key_of(&error), "stuck-threshold");
    says(
        &error,
        &[
            "invalid value `soon`",
            "expected a duration like `PT5S` or `5s`",
        ],
    );
    let error = toml_error("[events.inbox]\nhandler-timeout = 30\n");
    assert_eq!(key_of(&error), "events.inbox.handler-timeout");
    says(&error, &["as a string: a bare number has no unit"]);
    let error = toml_error("[events.inbox]\nretention = \"forever\"\n");
    says(&error, &["events.inbox.retention", "or `off`"]);
    let error = toml_error("[staleness]\npending = \"1 fortnight\"\n");
    assert_eq!(key_of(&error), "staleness.pending");
    says(&error, &["unknown unit `fortnight`"]);

    let error = env_error(&[("BANDEJA_EVENTS_INBOX_POLLING_INTERVAL", "-1s")]);
    assert_eq!(key_of(&error), "BANDEJA_EVENTS_INBOX_POLLING_INTERVAL");
    says(&error, &["durations cannot be negative"]);
    let error = env_error(&[("BANDEJA_STUCK_THRESHOLD", "5")]);
    says(
        &error,
        &[
            "BANDEJA_STUCK_THRESHOLD",
            "missing unit after `5`, as in `5s`",
        ],
    );
    // Longer than the stores' timestamps can hold: SQLite would compute no lease at all.
    let error = toml_error("[events.inbox]\nlock-at-most-for = \"P100000W\"\n");
    assert_eq!(key_of(&error), "events.inbox.lock-at-most-for");
    says(&error, &["must be at most 100 years (P36500D)"]);
    let error = env_error(&[("BANDEJA_STUCK_THRESHOLD", "18446744073709551615s")]);
    assert_eq!(key_of(&error), "stuck-threshold");
    says(&error, &["must be at most 100 years"]);
    let error = toml_error("[events.outbox]\npolling-interval = \"PT0S\"\n");
    assert_eq!(key_of(&error), "events.outbox.polling-interval");
    says(&error, &["must be greater than zero"]);
}

#[test]
fn zero_negative_and_oversized_batch_sizes_are_named() {
    let error = toml_error("[events.inbox]\nbatch-size = 0\n");
    assert_eq!(key_of(&error), "events.inbox.batch-size");
    says(
        &error,
        &["invalid value `0`", "must be between 1 and 10000"],
    );
    let error = toml_error("[events.inbox]\nbatch-size = -5\n");
    assert_eq!(key_of(&error), "events.inbox.batch-size");
    says(
        &error,
        &[
            "invalid value `-5`",
            "expected an integer between 1 and 10000",
        ],
    );
    let error = toml_error("[events.inbox]\nbatch-size = \"ten\"\n");
    says(&error, &["events.inbox.batch-size", "expected an integer"]);
    let error = toml_error("[commands.outbox]\nbatch-size = 10001\n");
    says(
        &error,
        &["commands.outbox.batch-size", "must be between 1 and 10000"],
    );
    let error = toml_error("[commands.outbox]\nmax-retries = -1\n");
    says(
        &error,
        &[
            "commands.outbox.max-retries",
            "expected an integer between 0 and 1000",
        ],
    );
    let error = toml_error("[events.outbox]\nretry-jitter = 1.5\n");
    says(
        &error,
        &["events.outbox.retry-jitter", "must be between 0.0 and 1.0"],
    );
    let error = env_error(&[("BANDEJA_COMMANDS_INBOX_BATCH_SIZE", "0")]);
    says(
        &error,
        &["commands.inbox.batch-size", "must be between 1 and 10000"],
    );
    let error = env_error(&[("BANDEJA_COMMANDS_INBOX_BATCH_SIZE", "-3")]);
    assert_eq!(key_of(&error), "BANDEJA_COMMANDS_INBOX_BATCH_SIZE");
    says(&error, &["expected an integer between 1 and 10000"]);
}

/// A configuration refused in code stops `build()`: no worker starts, nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_configuration_starts_nothing_and_writes_nothing() {
    let (store, _guard) = sqlite_store().await;
    let before = snapshot(&store).await;
    let mut zero_batch = quick_config();
    zero_batch.events_inbox.batch_size = 0;
    let mut backwards_lease = quick_config();
    backwards_lease.commands_outbox.lock_at_most_for = Duration::from_secs(1);
    let mut empty_topic = quick_config();
    empty_topic
        .command_topics
        .insert("billing".into(), " ".into());
    for (config, key) in [
        (zero_batch, "events.inbox.batch-size"),
        (backwards_lease, "commands.outbox.lock-at-most-for"),
        (empty_topic, "commands.topics.billing"),
    ] {
        let error = Bandeja::builder(store.clone())
            .config(config)
            .on_event::<Note, _>("audit", Seen::default())
            .build()
            .err()
            .expect("refused");
        match &error {
            Error::Config(config) => assert_eq!(key_of(config), key, "{error}"),
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }
    assert_eq!(snapshot(&store).await, before);
}
