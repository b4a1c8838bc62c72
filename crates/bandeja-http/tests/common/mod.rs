//! Shared by the HTTP tests: real stores (a SQLite file per test, a PostgreSQL schema per
//! test), a runtime with short intervals and a handler that fails a chosen message once,
//! and a helper that calls the router with `oneshot`.

// Each test crate uses a part of this module.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use bandeja_conformance::fixtures::{fast_config, sqlite_temp, take_over, Ping, TempDir};
use bandeja_core::store::{Inspect, Outcome, Resolution};
use bandeja_core::{
    BoxKind, Event, EventHandler, HandlerContext, HandlerError, MessageId, MessageKind,
    MessageRecord, MessageStatus, Payload, Store, TenantId,
};
use bandeja_postgres::PgStore;
use bandeja_sqlite::SqliteStore;
use serde::{Deserialize, Serialize};
use tower::ServiceExt;

pub mod browser;
pub mod outbox_replay;

/// How long a test waits for asynchronous work.
pub const WAIT: Duration = Duration::from_secs(20);

/// The event the tests emit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderPlaced {
    pub n: u64,
}

impl Payload for OrderPlaced {
    const TYPE: &'static str = "http_test.OrderPlaced";
}

/// What the handler of [`OrderPlaced`] emits: a follow-up in the same trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderShipped {
    pub n: u64,
}

impl Payload for OrderShipped {
    const TYPE: &'static str = "http_test.OrderShipped";
}

/// Fails the messages whose number is in `poison` once (permanently: straight to FAILED)
/// and those in `hiccup` once (retriable: retried at once), succeeds otherwise; emits an
/// [`OrderShipped`] for each order it handles.
#[derive(Clone, Default)]
pub struct Flaky {
    pub poison: Arc<Mutex<HashSet<u64>>>,
    pub hiccup: Arc<Mutex<HashSet<u64>>>,
}

impl Flaky {
    /// Fails each of `numbers` once, permanently.
    pub fn failing(numbers: &[u64]) -> Flaky {
        Flaky {
            poison: Arc::new(Mutex::new(numbers.iter().copied().collect())),
            ..Flaky::default()
        }
    }

    /// Also fails each of `numbers` once with a retriable error.
    pub fn hiccups(self, numbers: &[u64]) -> Flaky {
        Flaky {
            hiccup: Arc::new(Mutex::new(numbers.iter().copied().collect())),
            ..self
        }
    }
}

impl<S: Store> EventHandler<S, OrderPlaced> for Flaky {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<OrderPlaced>,
    ) -> Result<(), HandlerError> {
        let n = event.payload.n;
        let poisoned = self
            .poison
            .lock()
            .map(|mut p| p.remove(&n))
            .unwrap_or(false);
        if poisoned {
            return Err(HandlerError::permanent(format!(
                "payment service refused order {n}"
            )));
        }
        let hiccup = self
            .hiccup
            .lock()
            .map(|mut p| p.remove(&n))
            .unwrap_or(false);
        if hiccup {
            return Err(HandlerError::retriable(format!(
                "payment service timed out on order {n}"
            )));
        }
        ctx.emit(Event::new("Order", n.to_string(), OrderShipped { n }))
            .map_err(HandlerError::permanent)?;
        Ok(())
    }
}

/// A runtime on `store` with [`Flaky`] subscribed as `billing`, with short intervals so
/// the tests take milliseconds.
pub fn runtime<S: Store>(store: S, flaky: Flaky) -> bandeja_core::Bandeja<S> {
    bandeja_core::Bandeja::builder(store)
        .config(fast_config())
        .on_event::<OrderPlaced, _>("billing", flaky)
        .build()
        .expect("valid runtime")
}

/// Starts a runtime on `store` whose handler fails order `n` permanently, emits that order
/// and waits until its inbox row is FAILED. Returns the running workers and the event.
pub async fn start_with_a_failed_order<S: Store + Inspect>(
    store: &S,
    n: u64,
) -> (bandeja_core::Running, Event<OrderPlaced>) {
    let bandeja = runtime(store.clone(), Flaky::failing(&[n]));
    let running = bandeja.start().await.expect("start");
    let event = order(n);
    bandeja.emit(&event).await.expect("emit");
    wait_for_status(store, BoxKind::InboxEvents, event.id, MessageStatus::Failed).await;
    (running, event)
}

/// An order event.
pub fn order(n: u64) -> Event<OrderPlaced> {
    Event::new("Order", n.to_string(), OrderPlaced { n })
        .with_correlation_id(format!("checkout-{n}"))
}

/// A fresh, migrated SQLite store in a file of its own.
pub async fn sqlite_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-http", SqliteStore::connect).await
}

pub use bandeja_postgres::testing::SchemaGuard;

/// A fresh, migrated PostgreSQL store in a schema of its own; `None` (after a notice) when
/// PostgreSQL is unreachable outside CI. In CI an unreachable PostgreSQL fails the test.
pub async fn pg_store() -> Option<(PgStore, SchemaGuard)> {
    bandeja_postgres::testing::fresh_store("bandeja_http").await
}

/// A TCP port nobody listens on at the moment.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A response: status, headers, body text.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Checks that `reply` is `/health` answering DOWN because the database is unreachable.
pub fn assert_database_down(reply: &Reply) {
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.body
    );
    let body = reply.json();
    assert_eq!(body["status"], "DOWN");
    assert_eq!(body["database"]["status"], "DOWN");
    let reason = body["database"]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("database unreachable"), "{body}");
}

/// Calls `app` once (`oneshot`), with the bearer `token` if given.
pub async fn call(app: &Router, method: &str, uri: &str, token: Option<&str>) -> Reply {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).expect("request"))
        .await
        .expect("the router never fails");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024)
        .await
        .expect("body");
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The status of message `id`'s row in `box_kind` (the first one found).
pub async fn status_of<S: Inspect>(
    store: &S,
    box_kind: BoxKind,
    id: MessageId,
) -> Option<MessageStatus> {
    store
        .rows(box_kind)
        .await
        .ok()?
        .into_iter()
        .find(|r| r.message.record.id == id)
        .map(|r| r.message.status)
}

/// Waits until message `id` has a row in `box_kind` with `status`.
pub async fn wait_for_status<S: Inspect>(
    store: &S,
    box_kind: BoxKind,
    id: MessageId,
    status: MessageStatus,
) {
    bandeja_core::testing::eventually(WAIT, || async {
        (status_of(store, box_kind, id).await == Some(status)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{id} never reached {status} in {box_kind}: {e:?}"));
}

/// Writes two Ping events into the events outbox through the `Store` API and has each
/// taken over once (claimed with a 1 ms lease by worker `dead`, again by worker `alive`
/// once that ran out); `alive` then marks the first FAILED (`no route`, no failed attempt
/// counted) and keeps holding the second (PROCESSING). The outbox must hold no other due
/// row. Returns the ids: (FAILED, PROCESSING).
pub async fn two_rows_taken_over<S: Store>(store: &S) -> (MessageId, MessageId) {
    let records: Vec<MessageRecord> = (0..2)
        .map(|n| {
            let event = Event::new("Ping", format!("taken-{n}"), Ping { n });
            let mut record = MessageRecord::from_event(&event).expect("a valid event");
            record.tenant_id = TenantId::default_tenant();
            record
        })
        .collect();
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(&mut *tx, MessageKind::Event, &records)
        .await
        .expect("insert");
    store.commit(tx).await.expect("commit");
    take_over(store, &records).await;
    let failed = Outcome {
        id: records[0].id,
        subscriber: None,
        resolution: Resolution::Failed {
            retry_count: 0,
            error: "no route".into(),
        },
    };
    store
        .resolve(BoxKind::OutboxEvents, "alive", &[failed])
        .await
        .expect("resolve");
    (records[0].id, records[1].id)
}

/// Checks that `GET /boxes` (per box and per tenant) and `GET /metrics` count the two rows
/// of [`two_rows_taken_over`] as taken over, and that `GET /messages` and
/// `GET /messages/{id}` show each with 1 takeover and 0 retries.
pub async fn assert_taken_over_shown(
    app: &Router,
    token: Option<&str>,
    (failed, held): (MessageId, MessageId),
) {
    let boxes = call(app, "GET", "/boxes", None).await;
    assert_eq!(boxes.status, StatusCode::OK, "{}", boxes.body);
    let boxes = boxes.json();
    let taken: Vec<(String, u64)> = boxes["boxes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            (
                b["box"].as_str().unwrap_or_default().to_owned(),
                b["taken_over"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect();
    assert_eq!(
        taken,
        [
            ("outbox_events".to_owned(), 2),
            ("inbox_events".to_owned(), 0),
            ("outbox_commands".to_owned(), 0),
            ("inbox_commands".to_owned(), 0),
        ],
        "{boxes}"
    );
    let outbox = &boxes["boxes"][0];
    assert_eq!(
        (&outbox["processing"], &outbox["failed"]),
        (&1.into(), &1.into()),
        "{outbox}"
    );
    let by_tenant = call(app, "GET", "/boxes?by=tenant", None).await.json();
    let default = by_tenant["boxes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["box"] == "outbox_events" && b["tenant"] == "default")
        .cloned()
        .unwrap_or_default();
    assert_eq!(default["taken_over"], 2, "{by_tenant}");

    let metrics = call(app, "GET", "/metrics", None).await.body;
    for needle in [
        "# TYPE bandeja_box_taken_over_rows gauge",
        "bandeja_box_taken_over_rows{box=\"outbox_events\"} 2",
        "bandeja_box_taken_over_rows{box=\"inbox_events\"} 0",
    ] {
        assert!(metrics.contains(needle), "missing {needle}:\n{metrics}");
    }

    let listed = call(app, "GET", "/messages?box=outbox_events", token).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let listed = listed.json();
    let attempts: Vec<(String, u64, u64)> = listed["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["type"] == "conformance.Ping")
        .map(|m| {
            (
                m["id"].as_str().unwrap_or_default().to_owned(),
                m["takeovers"].as_u64().unwrap_or(u64::MAX),
                m["retry_count"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect();
    assert_eq!(
        attempts,
        [(held.to_string(), 1, 0), (failed.to_string(), 1, 0)],
        "{listed}"
    );
    let shown = call(app, "GET", &format!("/messages/{failed}"), token)
        .await
        .json();
    assert_eq!(shown["rows"][0]["takeovers"], 1, "{shown}");
    assert_eq!(shown["rows"][0]["retry_count"], 0, "{shown}");
    assert_eq!(shown["rows"][0]["status"], "FAILED", "{shown}");
}
