//! The endpoints behind the dashboard's message browser, over a real SQLite store with real
//! traffic: a row's retry acts on that row only; a FAILED row is discarded into the archive
//! with who and why and is still found; a selection is retried or discarded in one call; a
//! message shows its attempts; the timeline counts what was handled and failed; the live
//! workers are listed.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use bandeja_core::testing::eventually;
use bandeja_core::{BoxKind, Event, MessageStatus};
use bandeja_http::{router, HttpOptions};
use bandeja_sqlite::SqliteStore;
use common::{
    call, order, runtime, sqlite_store, status_of, wait_for_status, Flaky, OrderPlaced, Reply, WAIT,
};
use tower::ServiceExt;

const TOKEN: &str = "browser-token";

/// Posts `body` as JSON with the token.
async fn post_json(app: &Router, uri: &str, body: serde_json::Value) -> Reply {
    let request = Request::builder()
        .method("POST")
        .uri(uri)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("request");
    let response = app.clone().oneshot(request).await.expect("router");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 24)
        .await
        .expect("body");
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// A runtime where `billing` and `audit` both refuse the orders in `failing` for good.
fn two_failing_subscribers(
    store: SqliteStore,
    failing: &[u64],
) -> bandeja_core::Bandeja<SqliteStore> {
    bandeja_core::Bandeja::builder(store)
        .config(bandeja_conformance::fixtures::fast_config())
        .on_event::<OrderPlaced, _>("billing", Flaky::failing(failing))
        .on_event::<OrderPlaced, _>("audit", Flaky::failing(failing))
        .build()
        .expect("valid runtime")
}

/// The inbox status of `event` for `subscriber`.
async fn inbox_status(
    store: &SqliteStore,
    event: &Event<OrderPlaced>,
    subscriber: &str,
) -> Option<MessageStatus> {
    use bandeja_core::store::Inspect;
    store
        .rows(BoxKind::InboxEvents)
        .await
        .ok()?
        .into_iter()
        .find(|r| {
            r.message.record.id == event.id && r.message.subscriber.as_deref() == Some(subscriber)
        })
        .map(|r| r.message.status)
}

async fn wait_inbox(
    store: &SqliteStore,
    event: &Event<OrderPlaced>,
    subscriber: &str,
    status: MessageStatus,
) {
    eventually(WAIT, || async {
        (inbox_status(store, event, subscriber).await == Some(status)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{subscriber}'s row never reached {status}: {e:?}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rows_retry_and_discard_act_on_that_row_only() {
    let (store, _file) = sqlite_store().await;
    let bandeja = two_failing_subscribers(store.clone(), &[1, 2]);
    let running = bandeja.start().await.expect("start");
    let (one, two) = (order(1), order(2));
    bandeja.emit(&one).await.expect("emit");
    bandeja.emit(&two).await.expect("emit");
    for event in [&one, &two] {
        wait_inbox(&store, event, "billing", MessageStatus::Failed).await;
        wait_inbox(&store, event, "audit", MessageStatus::Failed).await;
    }
    let app = router(store.clone(), HttpOptions::new().token(TOKEN));

    // Retry billing's row of order 1: audit's row stays FAILED.
    let uri = format!(
        "/messages/{}/retry?box=inbox_events&subscriber=billing",
        one.id
    );
    let reply = call(&app, "POST", &uri, Some(TOKEN)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.json()["retried"], 1);
    wait_inbox(&store, &one, "billing", MessageStatus::Completed).await;
    assert_eq!(
        inbox_status(&store, &one, "audit").await,
        Some(MessageStatus::Failed)
    );

    // Discard audit's row of order 1 with a reason: it leaves the box for the archive.
    let no_reason = format!(
        "/messages/{}/discard?box=inbox_events&subscriber=audit",
        one.id
    );
    let reply = call(&app, "POST", &no_reason, Some(TOKEN)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
    assert!(reply.body.contains("reason"), "{}", reply.body);
    let uri = format!("{no_reason}&reason=bad%20data&by=ana");
    let reply = call(&app, "POST", &uri, Some(TOKEN)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.json()["discarded"], 1);
    assert_eq!(
        inbox_status(&store, &one, "audit").await,
        None,
        "left the box"
    );
    let again = call(&app, "POST", &uri, Some(TOKEN)).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    // Retrying the discarded row says where it went.
    let retry = format!(
        "/messages/{}/retry?box=inbox_events&subscriber=audit",
        one.id
    );
    let reply = call(&app, "POST", &retry, Some(TOKEN)).await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.body);
    assert!(
        reply.body.contains("inbox_events_archive (audit): FAILED"),
        "{}",
        reply.body
    );
    // Archived rows are listed, never acted on.
    for action in [
        "/retry?archived=true",
        "/discard?archived=true&type=x&reason=y",
    ] {
        let reply = call(&app, "POST", action, Some(TOKEN)).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{action}: {}",
            reply.body
        );
        assert!(reply.body.contains("`archived=true`"), "{}", reply.body);
    }

    let archived = call(&app, "GET", "/messages?archived=true", Some(TOKEN)).await;
    assert_eq!(archived.status, StatusCode::OK, "{}", archived.body);
    let body = archived.json();
    let rows = body["messages"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{body}");
    assert_eq!(rows[0]["id"], one.id.to_string());
    assert_eq!(rows[0]["subscriber"], "audit");
    assert_eq!(rows[0]["status"], "FAILED");
    assert_eq!(rows[0]["discard_reason"], "bad data");
    assert!(
        rows[0]["discarded_by"]
            .as_str()
            .unwrap_or_default()
            .contains("ana"),
        "{body}"
    );
    assert!(rows[0]["archived_at"].is_string(), "{body}");
    assert_eq!(body["total"], 1);

    // The message page finds the archived row beside the live ones.
    let shown = call(&app, "GET", &format!("/messages/{}", one.id), Some(TOKEN)).await;
    let shown = shown.json();
    let rows = shown["rows"].as_array().expect("rows");
    let archived: Vec<_> = rows
        .iter()
        .filter(|r| r["archived_at"].is_string())
        .collect();
    assert_eq!(archived.len(), 1, "{shown}");
    assert_eq!(archived[0]["subscriber"], "audit");
    assert!(rows
        .iter()
        .any(|r| r["subscriber"] == "billing" && r["status"] == "COMPLETED"));

    // A selection: retry billing's row of order 2, discard audit's; a PENDING-or-done row
    // named in it is skipped.
    let selected = |subscriber: &str| serde_json::json!({"id": two.id.to_string(), "box": "inbox_events", "subscriber": subscriber});
    let reply = post_json(
        &app,
        "/selection/retry",
        serde_json::json!({"rows": [selected("billing"),
            {"id": one.id.to_string(), "box": "inbox_events", "subscriber": "billing"}]}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.json()["retried"], 1);
    assert_eq!(reply.json()["skipped"], 1);
    wait_inbox(&store, &two, "billing", MessageStatus::Completed).await;
    let reply = post_json(
        &app,
        "/selection/discard",
        serde_json::json!({"rows": [selected("audit")]}),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::BAD_REQUEST,
        "a reason is required: {}",
        reply.body
    );
    let reply = post_json(
        &app,
        "/selection/discard",
        serde_json::json!({"rows": [selected("audit")], "reason": "duplicate order"}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.json()["discarded"], 1);
    assert_eq!(inbox_status(&store, &two, "audit").await, None);
    let bad = post_json(
        &app,
        "/selection/retry",
        serde_json::json!({"rows": [{"id": two.id.to_string(), "box": "inbox_events"}]}),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.body.contains("rows[0]") && bad.body.contains("subscriber"),
        "{}",
        bad.body
    );

    // A bulk discard needs a filter.
    let reply = call(&app, "POST", "/discard?reason=x", Some(TOKEN)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);

    // Pruning the archive: nothing archived a day ago; both discarded rows before a
    // minute from now. The boxes' own rows stay.
    let reply = call(
        &app,
        "POST",
        "/purge?archive=true&older_than=1d",
        Some(TOKEN),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.json()["purged"], 0);
    let soon = (chrono::Utc::now() + chrono::TimeDelta::minutes(1)).to_rfc3339();
    let uri = format!(
        "/purge?archive=true&completed_before={}",
        soon.replace('+', "%2B")
    );
    let reply = call(&app, "POST", &uri, Some(TOKEN)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.json()["purged"], 2, "{}", reply.body);
    let archived = call(&app, "GET", "/messages?archived=true", Some(TOKEN))
        .await
        .json();
    assert_eq!(archived["total"], 0, "{archived}");
    assert_eq!(
        inbox_status(&store, &one, "billing").await,
        Some(MessageStatus::Completed)
    );
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_shows_its_attempts_and_the_timeline_and_workers_show_the_work() {
    let (store, _file) = sqlite_store().await;
    // Order 1 times out once, then succeeds; order 2 is refused for good.
    let flaky = Flaky::failing(&[2]).hiccups(&[1]);
    let bandeja = runtime(store.clone(), flaky);
    let running = bandeja.start().await.expect("start");
    let app = router(store.clone(), HttpOptions::new());
    let (one, two) = (order(1), order(2));
    bandeja.emit(&one).await.expect("emit");
    bandeja.emit(&two).await.expect("emit");
    for n in 3..=5 {
        bandeja.emit(&order(n)).await.expect("emit");
    }
    wait_for_status(
        &store,
        BoxKind::InboxEvents,
        one.id,
        MessageStatus::Completed,
    )
    .await;
    wait_for_status(&store, BoxKind::InboxEvents, two.id, MessageStatus::Failed).await;

    let shown = call(&app, "GET", &format!("/messages/{}", one.id), None).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    let shown = shown.json();
    let attempts = shown["attempts"].as_array().expect("attempts");
    assert_eq!(
        attempts.len(),
        1,
        "one failed attempt, then success: {shown}"
    );
    assert_eq!(attempts[0]["outcome"], "RETRIED");
    assert_eq!(attempts[0]["subscriber"], "billing");
    assert_eq!(attempts[0]["attempt"], 1);
    assert!(attempts[0]["error"]
        .as_str()
        .unwrap_or_default()
        .contains("timed out on order 1"));
    let failed = call(&app, "GET", &format!("/messages/{}", two.id), None)
        .await
        .json();
    let attempts = failed["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 1, "{failed}");
    assert_eq!(attempts[0]["outcome"], "FAILED");

    // Five handled by billing, one failed attempt per order 1 and 2, in the last minutes.
    let timeline = eventually(WAIT, || async {
        let body = call(&app, "GET", "/timeline?minutes=5", None).await.json();
        let sum = |key: &str| -> u64 {
            body["boxes"]["inbox_events"]
                .as_array()
                .map(|m| m.iter().map(|x| x[key].as_u64().unwrap_or(0)).sum())
                .unwrap_or(0)
        };
        (sum("handled") >= 4 && sum("failed") >= 2).then_some(body)
    })
    .await
    .expect("the timeline counts the handled rows and the failed attempts");
    let minutes = timeline["minutes"].as_array().expect("minutes");
    assert_eq!(minutes.len(), 5, "every minute listed: {timeline}");
    assert!(minutes
        .iter()
        .any(|m| m["lag_max_seconds"].as_f64().unwrap_or(0.0) > 0.0));
    let bad = call(&app, "GET", "/timeline?minutes=0", None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);

    let workers = call(&app, "GET", "/workers", None).await;
    assert_eq!(workers.status, StatusCode::OK, "{}", workers.body);
    let workers = workers.json();
    let processes = workers["processes"].as_array().expect("processes");
    assert_eq!(processes.len(), 1, "this process: {workers}");
    assert_eq!(processes[0]["pid"], std::process::id());
    assert_eq!(processes[0]["subscribers"], serde_json::json!(["billing"]));
    assert_eq!(processes[0]["boxes"], serde_json::json!(["inbox_events"]));
    running.shutdown().await;
    assert!(status_of(&store, BoxKind::InboxEvents, two.id).await == Some(MessageStatus::Failed));
}
