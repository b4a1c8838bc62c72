//! `GET /subscribers`, `POST /subscribers/{name}/retire` and the subscriptions in
//! `/health`, over real stores and real runtimes: an old version registered `billing` and
//! stopped; the new version runs `audit` only and relays the orders, so `billing`'s rows wait
//! for a process that runs it — listed as waiting, then unattended (health DOWN naming it) —
//! until an operator retires it.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;
use bandeja_conformance::fixtures::fast_config;
use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;
use bandeja_core::MessageId;
use bandeja_core::{Bandeja, BoxKind, MessageStatus, Store};
use bandeja_http::{router, HttpOptions};
use common::{call, order, pg_store, sqlite_store, Flaky, Reply, WAIT};
use serde_json::Value;

const TOKEN: &str = "subscribers-token";

/// A runtime running `subscribers` (each with [`Flaky`]) for the orders.
fn runtime<S: Store>(store: &S, subscribers: &[&str]) -> Bandeja<S> {
    subscribers
        .iter()
        .fold(
            Bandeja::builder(store.clone()).config(fast_config()),
            |builder, name| builder.on_event::<common::OrderPlaced, _>(name, Flaky::default()),
        )
        .build()
        .expect("valid runtime")
}

/// The old version ran `billing` and stopped; the new one runs `audit` and relays `n`
/// orders: `billing` has `n` PENDING rows and no process. Returns the new version running.
async fn billing_left_behind<S: Inspect>(store: &S, n: u64) -> bandeja_core::Running {
    let old = runtime(store, &["billing"]);
    old.start()
        .await
        .expect("start the old version")
        .shutdown()
        .await;
    let new = runtime(store, &["audit"]);
    let running = new.start().await.expect("start the new version");
    for i in 1..=n {
        let event = order(i);
        new.emit(&event).await.expect("emit");
        handled_by_audit(store, event.id).await;
    }
    running
}

/// Waits until `audit` completed message `id`.
async fn handled_by_audit<S: Inspect>(store: &S, id: MessageId) {
    eventually(WAIT, || async {
        let rows = store.rows(BoxKind::InboxEvents).await.ok()?;
        rows.iter()
            .any(|r| {
                r.message.record.id == id
                    && r.message.subscriber.as_deref() == Some("audit")
                    && r.message.status == MessageStatus::Completed
            })
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("audit never completed {id}: {e:?}"));
}

fn entry<'a>(listing: &'a Value, subscriber: &str) -> &'a Value {
    listing["subscriptions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["subscriber"] == subscriber)
        .unwrap_or_else(|| panic!("no {subscriber} in {listing}"))
}

async fn listing(app: &Router) -> Value {
    let reply = call(app, "GET", "/subscribers", Some(TOKEN)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.json()
}

fn error_of(reply: &Reply) -> String {
    reply.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_then_unattended_subscriptions_show_in_health_until_retired() {
    let (store, _file) = sqlite_store().await;
    let running = billing_left_behind(&store, 2).await;
    let options = HttpOptions::new()
        .token(TOKEN)
        .live_for(Duration::from_secs(600));
    let patient = router(
        store.clone(),
        options.clone().stuck_threshold(Duration::from_secs(3600)),
    );
    let strict = router(
        store.clone(),
        options.stuck_threshold(Duration::from_millis(300)),
    );

    let listed = listing(&patient).await;
    assert_eq!(listed["stuck_threshold"], "PT1H");
    let audit = entry(&listed, "audit");
    assert_eq!(audit["state"], "running", "{audit}");
    assert_eq!(audit["kind"], "event");
    assert_eq!(audit["type"], "http_test.OrderPlaced");
    let process = &audit["processes"][0];
    assert_eq!(process["pid"], std::process::id(), "{audit}");
    assert!(process["host"].is_string() && process["started_at"].is_string());
    let billing = entry(&listed, "billing");
    assert_eq!(billing["state"], "waiting", "{billing}");
    assert_eq!(billing["processes"], Value::Array(Vec::new()));
    assert_eq!(
        (&billing["pending"], &billing["failed"]),
        (&2.into(), &0.into())
    );
    assert!(billing["first_seen_at"].is_string() && billing["last_seen_at"].is_string());

    // Waiting is normal during a deploy: UP, and said.
    let health = call(&patient, "GET", "/health", None).await;
    assert_eq!(health.status, StatusCode::OK, "{}", health.body);
    let part = &health.json()["subscriptions"];
    assert_eq!(part["status"], "UP", "{part}");
    assert_eq!(part["waiting"][0]["subscriber"], "billing", "{part}");
    assert_eq!(part["waiting"][0]["pending"], 2, "{part}");
    assert_eq!(part["unattended"], Value::Array(Vec::new()));

    // Nobody refreshed it for longer than the stuck threshold: DOWN, naming it.
    let down = eventually(WAIT, || async {
        let reply = call(&strict, "GET", "/health", None).await;
        let body = reply.json();
        (body["subscriptions"]["status"] == "DOWN").then_some((reply.status, body))
    })
    .await
    .expect("health turns DOWN once billing is unattended");
    assert_eq!(down.0, StatusCode::SERVICE_UNAVAILABLE);
    let (body, part) = (&down.1, &down.1["subscriptions"]);
    assert_eq!(body["status"], "DOWN");
    let reason = part["reason"].as_str().unwrap_or_default();
    for needle in [
        "`billing`",
        "events: http_test.OrderPlaced",
        "2 pending row(s)",
        "bandeja subscribers retire billing",
    ] {
        assert!(reason.contains(needle), "{needle}: {reason}");
    }
    assert_eq!(part["unattended"][0]["subscriber"], "billing");
    assert_eq!(part["unattended"][0]["state"], "unattended");
    assert!(
        part["unattended"]
            .as_array()
            .is_some_and(|a| a.iter().all(|s| s["subscriber"] != "audit")),
        "a running subscription is never unattended: {part}"
    );

    // Retire: token, settle, live processes, names.
    let path = "/subscribers/billing/retire?settle=keep";
    assert_eq!(
        call(&strict, "POST", path, None).await.status,
        StatusCode::UNAUTHORIZED
    );
    let missing = call(&strict, "POST", "/subscribers/billing/retire", Some(TOKEN)).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST, "{}", missing.body);
    assert!(
        error_of(&missing).contains("settle=discard"),
        "{}",
        missing.body
    );
    let bad_kind = call(
        &strict,
        "POST",
        "/subscribers/billing/retire?settle=keep&kind=all",
        Some(TOKEN),
    )
    .await;
    assert_eq!(
        bad_kind.status,
        StatusCode::BAD_REQUEST,
        "{}",
        bad_kind.body
    );
    let live = call(
        &strict,
        "POST",
        "/subscribers/audit/retire?settle=discard",
        Some(TOKEN),
    )
    .await;
    assert_eq!(live.status, StatusCode::CONFLICT, "{}", live.body);
    let why = error_of(&live);
    assert!(
        why.contains("stop them first") && why.contains(&format!("pid {}", std::process::id())),
        "{why}"
    );
    let unknown = call(
        &strict,
        "POST",
        "/subscribers/biling/retire?settle=keep",
        Some(TOKEN),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.body);
    assert!(
        error_of(&unknown).contains("did you mean `billing`?"),
        "{}",
        unknown.body
    );
    let rejected = call(
        &strict,
        "POST",
        "/subscribers/bandeja.rejected/retire?settle=discard",
        Some(TOKEN),
    )
    .await;
    assert_eq!(
        rejected.status,
        StatusCode::BAD_REQUEST,
        "{}",
        rejected.body
    );

    let retired = call(
        &strict,
        "POST",
        "/subscribers/billing/retire?settle=keep&kind=events",
        Some(TOKEN),
    )
    .await;
    assert_eq!(retired.status, StatusCode::OK, "{}", retired.body);
    let report = retired.json();
    assert_eq!(report["subscriber"], "billing");
    assert_eq!(report["settle"], "keep");
    assert_eq!(report["kept"], 2, "{report}");
    assert_eq!(report["subscriptions"][0]["type"], "http_test.OrderPlaced");

    let listed = listing(&strict).await;
    assert!(
        listed["subscriptions"]
            .as_array()
            .is_some_and(|a| a.iter().all(|s| s["subscriber"] != "billing")),
        "{listed}"
    );
    let health = call(&strict, "GET", "/health", None).await.json();
    assert_eq!(health["subscriptions"]["status"], "UP", "{health}");
    let failed = call(
        &strict,
        "GET",
        "/messages?status=FAILED&subscriber=billing",
        Some(TOKEN),
    )
    .await
    .json();
    let errors: Vec<&str> = failed["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["last_error"].as_str())
        .collect();
    assert_eq!(errors.len(), 2, "{failed}");
    assert!(
        errors.iter().all(|e| e.contains("retired by an operator")),
        "{errors:?}"
    );
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_lists_and_retires_a_subscription_with_discard() {
    let Some((store, _schema)) = pg_store().await else {
        return;
    };
    let running = billing_left_behind(&store, 3).await;
    let app = router(store.clone(), HttpOptions::new().token(TOKEN));
    let listed = listing(&app).await;
    assert_eq!(listed["live_for"], "PT30S");
    let billing = entry(&listed, "billing");
    assert_eq!(billing["state"], "waiting", "{billing}");
    assert_eq!(billing["pending"], 3);
    assert_eq!(entry(&listed, "audit")["state"], "running");

    let retired = call(
        &app,
        "POST",
        "/subscribers/billing/retire?settle=discard",
        Some(TOKEN),
    )
    .await;
    assert_eq!(retired.status, StatusCode::OK, "{}", retired.body);
    assert_eq!(retired.json()["discarded"], 3, "{}", retired.body);
    let left = call(&app, "GET", "/messages?subscriber=billing", Some(TOKEN))
        .await
        .json();
    assert_eq!(left["messages"], Value::Array(Vec::new()), "{left}");

    // The new version relays on: no row for the retired subscriber.
    let bandeja = runtime(&store, &["audit"]);
    let event = order(10);
    bandeja.emit(&event).await.expect("emit");
    handled_by_audit(&store, event.id).await;
    let rows = call(&app, "GET", &format!("/messages/{}", event.id), Some(TOKEN))
        .await
        .json();
    let subscribers: Vec<&str> = rows["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["subscriber"].as_str())
        .collect();
    assert_eq!(subscribers, ["audit"], "{rows}");
    running.shutdown().await;
}
