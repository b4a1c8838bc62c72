//! `POST /replay/outbox` end to end, shared by the SQLite and PostgreSQL router tests:
//! orders handled by `billing` alone, then a runtime that also runs a new subscriber
//! `ledger`, and an outbox replay over HTTP backfills it.

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use axum::Router;
use bandeja_conformance::fixtures::fast_config;
use bandeja_core::admin::Admin;
use bandeja_core::config::{CompletionMode, CompletionModes};
use bandeja_core::testing::eventually;
use bandeja_core::{
    BoxKind, Event, EventHandler, HandlerContext, HandlerError, MessageStatus, Payload, Store,
};
use bandeja_http::{router, HttpOptions};

use super::{call, order, runtime, wait_for_status, Flaky, OrderPlaced, OrderShipped, WAIT};

/// Records the order numbers it handles.
#[derive(Clone, Default)]
struct Ledger(Arc<Mutex<Vec<u64>>>);

impl Ledger {
    fn seen(&self) -> Vec<u64> {
        let mut seen = self.0.lock().map(|s| s.clone()).unwrap_or_default();
        seen.sort_unstable();
        seen
    }
}

impl<S: Store> EventHandler<S, OrderPlaced> for Ledger {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<OrderPlaced>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(event.payload.n);
        }
        Ok(())
    }
}

/// Outbox rows of `message_type`.
async fn outbox_rows<S: Admin>(store: &S, message_type: &str) -> usize {
    store
        .rows(BoxKind::OutboxEvents)
        .await
        .expect("rows")
        .iter()
        .filter(|r| r.message.record.message_type == message_type)
        .count()
}

/// The whole check on `store` (fresh), with the router built over it and `token`.
pub async fn outbox_replay_over_http_backfills_a_new_subscriber<S: Admin>(store: S, token: &str) {
    let app = router(store.clone(), HttpOptions::new().token(token));
    let bandeja = runtime(store.clone(), Flaky::default());
    let running = bandeja.start().await.expect("start");
    let orders = [order(1), order(2)];
    for event in &orders {
        bandeja.emit(event).await.expect("emit");
        wait_for_status(
            &store,
            BoxKind::InboxEvents,
            event.id,
            MessageStatus::Completed,
        )
        .await;
    }
    eventually(WAIT, || async {
        (outbox_rows(&store, OrderShipped::TYPE).await == 2).then_some(())
    })
    .await
    .expect("billing shipped both orders");
    running.shutdown().await;

    assert_refusals(&app, token).await;
    let of_type = format!("/replay/outbox?type={}", OrderPlaced::TYPE);
    let dry = call(
        &app,
        "POST",
        &format!("{of_type}&dry_run=true"),
        Some(token),
    )
    .await;
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.body);
    assert_eq!(
        dry.json(),
        serde_json::json!({ "matched": 2, "dry_run": true })
    );

    let ledger = Ledger::default();
    let bandeja = bandeja_core::Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<OrderPlaced, _>("billing", Flaky::default())
        .on_event::<OrderPlaced, _>("ledger", ledger.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let replayed = call(&app, "POST", &of_type, Some(token)).await;
    assert_eq!(replayed.status, StatusCode::OK, "{}", replayed.body);
    assert_eq!(replayed.json(), serde_json::json!({ "replayed": 2 }));
    eventually(WAIT, || async { (ledger.seen() == [1, 2]).then_some(()) })
        .await
        .expect("the new subscriber handled both orders");
    let inbox = eventually(WAIT, || async {
        let rows = store.rows(BoxKind::InboxEvents).await.ok()?;
        let settled = rows.len() == 4
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed);
        settled.then_some(rows)
    })
    .await
    .expect("four inbox rows, all COMPLETED");
    running.shutdown().await;
    for row in &inbox {
        let expected = if row.message.subscriber.as_deref() == Some("billing") {
            2
        } else {
            1
        };
        assert_eq!(
            row.message.delivery_count, expected,
            "{:?}",
            row.message.subscriber
        );
    }
    assert_eq!(
        outbox_rows(&store, OrderShipped::TYPE).await,
        2,
        "billing did not handle the orders again"
    );
    assert_eq!(ledger.seen(), [1, 2], "each order once");

    let deleting = store
        .with_completion(
            CompletionModes::default().with(BoxKind::OutboxEvents, CompletionMode::Delete),
        )
        .expect("delete mode");
    let app = router(deleting, HttpOptions::new().token(token));
    let conflict = call(&app, "POST", &of_type, Some(token)).await;
    assert_eq!(conflict.status, StatusCode::CONFLICT, "{}", conflict.body);
    assert!(conflict.body.contains("`delete` mode"), "{}", conflict.body);
}

/// What the endpoint refuses: no token, no narrowing, a subscriber, an inbox, a status.
async fn assert_refusals(app: &Router, token: &str) {
    let anonymous = call(app, "POST", "/replay/outbox?type=t", None).await;
    assert_eq!(
        anonymous.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        anonymous.body
    );
    for (uri, needle) in [
        ("/replay/outbox", "all=true"),
        ("/replay/outbox?box=outbox_events", "all=true"),
        (
            "/replay/outbox?subscriber=billing&all=true",
            "no subscriber",
        ),
        ("/replay/outbox?box=inbox_events&all=true", "inbox_events"),
        ("/replay/outbox?status=FAILED&type=t", "COMPLETED"),
        ("/replay/outbox?all=maybe", "`all`"),
        ("/replay/outbox?limit=3&type=t", "`limit`"),
    ] {
        let reply = call(app, "POST", uri, Some(token)).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{uri}: {}",
            reply.body
        );
        assert!(reply.body.contains(needle), "{uri}: {}", reply.body);
    }
}
