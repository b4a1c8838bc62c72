//! The router over a real SQLite store with real traffic (emitted through the runtime,
//! some of it failing): health, counters, metrics, listings, the token rules, filters and
//! the operator actions.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use bandeja_core::telemetry::trace::{self, TraceParent};
use bandeja_core::testing::eventually;
use bandeja_core::{BoxKind, MessageId, MessageStatus, TenantId};
use bandeja_http::{router, HttpOptions};
use common::{
    assert_database_down, assert_taken_over_shown, call, order, runtime, sqlite_store,
    start_with_a_failed_order, two_rows_taken_over, wait_for_status, Flaky, WAIT,
};

const TOKEN: &str = "s3cret-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_goes_down_with_a_stuck_row_and_up_when_it_is_delivered() {
    let (store, _file) = sqlite_store().await;
    let app = router(
        store.clone(),
        HttpOptions::new().stuck_threshold(Duration::from_millis(50)),
    );
    let up = call(&app, "GET", "/health", None).await;
    assert_eq!(up.status, StatusCode::OK, "{}", up.body);
    let body = up.json();
    assert_eq!(body["status"], "UP");
    assert_eq!(body["database"]["status"], "UP");
    assert_eq!(body["boxes"].as_object().map(|b| b.len()), Some(4));

    let bandeja = runtime(store.clone(), Flaky::default());
    bandeja.emit(&order(1)).await.expect("emit");
    let down = eventually(WAIT, || async {
        let reply = call(&app, "GET", "/health", None).await;
        (reply.status == StatusCode::SERVICE_UNAVAILABLE).then_some(reply)
    })
    .await
    .expect("health goes DOWN once the PENDING row passes the threshold");
    let body = down.json();
    assert_eq!(body["status"], "DOWN");
    assert_eq!(body["database"]["status"], "UP");
    let outbox = &body["boxes"]["outbox_events"];
    assert_eq!(outbox["status"], "DOWN");
    assert_eq!(outbox["stuck"], 1);
    let reason = outbox["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("1 PENDING row(s) unchanged for longer than"),
        "{reason}"
    );
    assert_eq!(body["boxes"]["inbox_events"]["status"], "UP");

    let running = bandeja.start().await.expect("start");
    eventually(WAIT, || async {
        let reply = call(&app, "GET", "/health", None).await;
        (reply.status == StatusCode::OK).then_some(())
    })
    .await
    .expect("health is UP again once the row is delivered and handled");
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_down_when_the_database_is_unreachable() {
    let (store, _file) = sqlite_store().await;
    let app = router(store.clone(), HttpOptions::new().token(TOKEN));
    store.pool().close().await;

    assert_database_down(&call(&app, "GET", "/health", None).await);

    let metrics = call(&app, "GET", "/metrics", None).await;
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(
        metrics.body.contains("bandeja_database_up 0"),
        "{}",
        metrics.body
    );

    let boxes = call(&app, "GET", "/boxes", None).await;
    assert_eq!(
        boxes.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        boxes.body
    );
    assert!(boxes.json()["error"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boxes_show_the_counters_per_box_and_per_tenant() {
    let (store, _file) = sqlite_store().await;
    let bandeja = runtime(store.clone(), Flaky::default());
    let acme = TenantId::new("acme").expect("tenant");
    bandeja.emit(&order(1)).await.expect("emit");
    bandeja
        .emit(&order(2).with_tenant(acme.clone()))
        .await
        .expect("emit");
    bandeja
        .emit(&order(3).with_tenant(acme))
        .await
        .expect("emit");
    let app = router(store.clone(), HttpOptions::new());

    let reply = call(&app, "GET", "/boxes", None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let body = reply.json();
    assert_eq!(body["by"], "box");
    assert_eq!(body["stuck_threshold"], "PT5M");
    let boxes = body["boxes"].as_array().cloned().unwrap_or_default();
    assert_eq!(boxes.len(), 4, "{boxes:?}");
    let outbox = boxes
        .iter()
        .find(|b| b["box"] == "outbox_events")
        .expect("outbox_events counters");
    assert_eq!(outbox["pending"], 3);
    assert_eq!(outbox["failed"], 0);
    assert_eq!(outbox["stuck"], 0);
    assert!(outbox["oldest_pending_at"].is_string());

    let reply = call(&app, "GET", "/boxes?by=tenant", None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let body = reply.json();
    assert_eq!(body["by"], "tenant");
    let pending_of = |tenant: &str| {
        body["boxes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|b| b["box"] == "outbox_events" && b["tenant"] == tenant)
            .map(|b| b["pending"].clone())
    };
    assert_eq!(pending_of("acme"), Some(2.into()));
    assert_eq!(pending_of("default"), Some(1.into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_taken_over_are_counted_per_box_and_shown_apart_from_retries() {
    let (store, _file) = sqlite_store().await;
    let app = router(store.clone(), HttpOptions::new().token(TOKEN));
    let rows = two_rows_taken_over(&store).await;
    assert_taken_over_shown(&app, Some(TOKEN), rows).await;
}

/// The value of the first sample of `name` carrying every label of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|line| {
            line.starts_with(&format!("{name}{{")) || line.starts_with(&format!("{name} "))
        })
        .find(|line| {
            labels
                .iter()
                .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_counters_after_real_traffic() {
    let handle = bandeja_http::metrics::install_recorder().expect("recorder");
    let (store, _file) = sqlite_store().await;
    let app = router(store.clone(), HttpOptions::new().metrics(handle));
    let bandeja = runtime(store.clone(), Flaky::failing(&[2]).hiccups(&[3]));
    let running = bandeja.start().await.expect("start");
    let orders: Vec<_> = (1..=3).map(order).collect();
    for event in &orders {
        bandeja.emit(event).await.expect("emit");
    }
    wait_for_status(
        &store,
        BoxKind::InboxEvents,
        orders[0].id,
        MessageStatus::Completed,
    )
    .await;
    wait_for_status(
        &store,
        BoxKind::InboxEvents,
        orders[1].id,
        MessageStatus::Failed,
    )
    .await;
    wait_for_status(
        &store,
        BoxKind::InboxEvents,
        orders[2].id,
        MessageStatus::Completed,
    )
    .await;

    let reply = call(&app, "GET", "/metrics", None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let content_type = reply.headers["content-type"].to_str().unwrap_or_default();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let text = reply.body;
    let order_type = ("type", "http_test.OrderPlaced");
    let billing = ("subscriber", "billing");
    let at_least = |name: &str, labels: &[(&str, &str)], min: f64| {
        let value = sample(&text, name, labels);
        assert!(
            value.is_some_and(|v| v >= min),
            "{name} {labels:?} = {value:?}, expected at least {min}\n{text}"
        );
    };
    at_least(
        "bandeja_messages_emitted_total",
        &[("box", "outbox_events"), order_type],
        3.0,
    );
    at_least(
        "bandeja_messages_emitted_total",
        &[("box", "outbox_events"), ("type", "http_test.OrderShipped")],
        2.0,
    );
    at_least(
        "bandeja_messages_published_total",
        &[("box", "outbox_events"), order_type],
        3.0,
    );
    at_least(
        "bandeja_messages_handled_total",
        &[("box", "inbox_events"), order_type, billing],
        2.0,
    );
    at_least(
        "bandeja_messages_retried_total",
        &[("box", "inbox_events"), order_type, billing],
        1.0,
    );
    at_least(
        "bandeja_messages_failed_total",
        &[("box", "inbox_events"), order_type, billing],
        1.0,
    );
    at_least(
        "bandeja_commit_to_handled_seconds_count",
        &[("box", "inbox_events"), order_type, billing],
        2.0,
    );
    at_least(
        "bandeja_commit_to_published_seconds_count",
        &[("box", "outbox_events"), order_type],
        3.0,
    );
    assert!(
        text.contains("bandeja_commit_to_handled_seconds_bucket{"),
        "a histogram, not a summary:\n{text}"
    );
    at_least("bandeja_database_up", &[], 1.0);
    at_least("bandeja_lag_seconds", &[("box", "outbox_events")], 0.0);
    at_least(
        "bandeja_box_rows",
        &[("box", "inbox_events"), ("status", "FAILED")],
        1.0,
    );
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_actions_always_need_the_token_and_listings_need_it_when_configured() {
    let (store, _file) = sqlite_store().await;
    let some_id = MessageId::new();
    let guarded = router(store.clone(), HttpOptions::new().token(TOKEN));
    let actions = [
        "/retry".to_owned(),
        format!("/messages/{some_id}/retry"),
        "/replay?box=inbox_events".to_owned(),
        "/replay/outbox?type=t".to_owned(),
        "/purge?older_than=7d".to_owned(),
        "/archive?older_than=7d".to_owned(),
    ];
    for path in &actions {
        let anonymous = call(&guarded, "POST", path, None).await;
        assert_eq!(
            anonymous.status,
            StatusCode::UNAUTHORIZED,
            "{path}: {}",
            anonymous.body
        );
        assert!(anonymous.headers.contains_key("www-authenticate"));
        let wrong = call(&guarded, "POST", path, Some("guess")).await;
        assert_eq!(
            wrong.status,
            StatusCode::FORBIDDEN,
            "{path}: {}",
            wrong.body
        );
    }
    let ok = call(&guarded, "POST", "/retry", Some(TOKEN)).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    assert_eq!(ok.json()["retried"], 0);

    for path in ["/messages", &format!("/messages/{some_id}")] {
        let anonymous = call(&guarded, "GET", path, None).await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    let listed = call(&guarded, "GET", "/messages", Some(TOKEN)).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let missing = call(
        &guarded,
        "GET",
        &format!("/messages/{some_id}"),
        Some(TOKEN),
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);
    for path in ["/health", "/boxes", "/metrics", "/", "/dashboard"] {
        let open = call(&guarded, "GET", path, None).await;
        assert_eq!(open.status, StatusCode::OK, "{path}: {}", open.body);
    }

    // Without a configured token, nothing can change state; reads are open.
    let open = router(store.clone(), HttpOptions::new());
    for path in &actions {
        let refused = call(&open, "POST", path, Some(TOKEN)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{path}");
        let message = refused.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            message.contains("no admin token is configured"),
            "{message}"
        );
    }
    assert_eq!(
        call(&open, "GET", "/messages", None).await.status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_filters_are_rejected_with_a_400_naming_the_parameter() {
    let (store, _file) = sqlite_store().await;
    let app = router(store.clone(), HttpOptions::new().token(TOKEN));
    let cases = [
        (
            "GET",
            "/messages?box=outbox_events;DROP%20TABLE%20outbox_events",
            "`box`",
        ),
        ("GET", "/messages?status=DONE", "`status`"),
        ("GET", "/messages?since=yesterday", "`since`"),
        (
            "GET",
            "/messages?since=2024-05-02&until=2024-05-01",
            "`since`",
        ),
        ("GET", "/messages?id=42", "`id`"),
        ("GET", "/messages?limit=0", "`limit`"),
        ("GET", "/messages?limit=many", "`limit`"),
        ("GET", "/messages?before=x", "`before`"),
        ("GET", "/messages?colour=red", "`colour`"),
        (
            "GET",
            "/messages?box=inbox_events&box=outbox_events",
            "more than once",
        ),
        ("GET", "/messages/not-a-uuid", "message id"),
        ("GET", "/boxes?by=colour", "`by`"),
        ("POST", "/retry?status=COMPLETED", "FAILED"),
        ("POST", "/replay", "at least one filter"),
        ("POST", "/replay?box=outbox_events", "inbox"),
        (
            "POST",
            "/replay?box=inbox_events&status=FAILED",
            "COMPLETED",
        ),
        ("POST", "/purge", "older_than"),
        ("POST", "/purge?older_than=-1d", "`older_than`"),
        (
            "POST",
            "/purge?older_than=7d&completed_before=2024-01-01",
            "not both",
        ),
        ("POST", "/archive?box=nope&older_than=1d", "`box`"),
    ];
    for (method, uri, needle) in cases {
        let reply = call(&app, method, uri, Some(TOKEN)).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{method} {uri}: {}",
            reply.body
        );
        let message = reply.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(message.contains(needle), "{method} {uri}: {message}");
    }
    // Text that looks like SQL is only ever data.
    let reply = call(
        &app,
        "GET",
        "/messages?type=x%27%20OR%20%271%27%3D%271",
        Some(TOKEN),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.json()["messages"].as_array().map(Vec::len), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_message_is_listed_retried_over_http_and_completed_by_the_worker() {
    let (store, _file) = sqlite_store().await;
    let app = router(store.clone(), HttpOptions::new().token(TOKEN));
    let (running, event) = start_with_a_failed_order(&store, 7).await;

    let failed = call(
        &app,
        "GET",
        "/messages?status=FAILED&box=inbox_events",
        Some(TOKEN),
    )
    .await;
    assert_eq!(failed.status, StatusCode::OK, "{}", failed.body);
    let rows = failed.json()["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["id"], event.id.to_string());
    assert_eq!(rows[0]["subscriber"], "billing");
    assert_eq!(rows[0]["status"], "FAILED");
    let error = rows[0]["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("payment service refused order 7"), "{error}");

    let retried = call(
        &app,
        "POST",
        &format!("/messages/{}/retry", event.id),
        Some(TOKEN),
    )
    .await;
    assert_eq!(retried.status, StatusCode::OK, "{}", retried.body);
    assert_eq!(retried.json()["retried"], 1);
    wait_for_status(
        &store,
        BoxKind::InboxEvents,
        event.id,
        MessageStatus::Completed,
    )
    .await;

    let again = call(
        &app,
        "POST",
        &format!("/messages/{}/retry", event.id),
        Some(TOKEN),
    )
    .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    let unknown = call(
        &app,
        "POST",
        &format!("/messages/{}/retry", MessageId::new()),
        Some(TOKEN),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.body);

    let shown = call(&app, "GET", &format!("/messages/{}", event.id), Some(TOKEN)).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    let body = shown.json();
    let inbox = body["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["box"] == "inbox_events")
        .cloned()
        .expect("the inbox row");
    assert_eq!(inbox["status"], "COMPLETED");
    assert_eq!(inbox["resubmitted_count"], 1);
    assert_eq!(inbox["payload"]["n"], 7);
    assert_eq!(inbox["headers"]["correlation_id"], "checkout-7");
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_all_replay_and_purge_act_on_what_the_filter_matches() {
    let (store, _file) = sqlite_store().await;
    let app = router(store.clone(), HttpOptions::new().token(TOKEN));
    let bandeja = runtime(store.clone(), Flaky::failing(&[1, 2]));
    let running = bandeja.start().await.expect("start");
    let orders: Vec<_> = (1..=3).map(order).collect();
    for event in &orders {
        bandeja.emit(event).await.expect("emit");
    }
    for (event, status) in orders.iter().zip([
        MessageStatus::Failed,
        MessageStatus::Failed,
        MessageStatus::Completed,
    ]) {
        wait_for_status(&store, BoxKind::InboxEvents, event.id, status).await;
    }

    let other_type = call(&app, "POST", "/retry?type=other.Type", Some(TOKEN)).await;
    assert_eq!(other_type.json()["retried"], 0);
    let all = call(
        &app,
        "POST",
        "/retry?type=http_test.OrderPlaced&status=failed",
        Some(TOKEN),
    )
    .await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.body);
    assert_eq!(all.json()["retried"], 2);
    for event in &orders[..2] {
        wait_for_status(
            &store,
            BoxKind::InboxEvents,
            event.id,
            MessageStatus::Completed,
        )
        .await;
    }

    let replayed = call(
        &app,
        "POST",
        &format!("/replay?box=inbox_events&id={}", orders[2].id),
        Some(TOKEN),
    )
    .await;
    assert_eq!(replayed.status, StatusCode::OK, "{}", replayed.body);
    assert_eq!(replayed.json()["replayed"], 1);
    let shown = eventually(WAIT, || async {
        let reply = call(
            &app,
            "GET",
            &format!("/messages/{}", orders[2].id),
            Some(TOKEN),
        )
        .await;
        let body = reply.json();
        let inbox = body["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["box"] == "inbox_events")
            .cloned()?;
        (inbox["status"] == "COMPLETED" && inbox["resubmitted_count"] == 1).then_some(inbox)
    })
    .await
    .expect("the replayed row is handled again");
    assert_eq!(shown["payload"]["n"], 3);
    running.shutdown().await;

    let purged = call(
        &app,
        "POST",
        "/purge?box=outbox_events&older_than=0s",
        Some(TOKEN),
    )
    .await;
    assert_eq!(purged.status, StatusCode::OK, "{}", purged.body);
    let body = purged.json();
    assert!(body["purged"].as_u64().is_some_and(|n| n >= 3), "{body}");
    let left = call(
        &app,
        "GET",
        "/messages?box=outbox_events&status=COMPLETED",
        Some(TOKEN),
    )
    .await;
    assert_eq!(
        left.json()["messages"].as_array().map(Vec::len),
        Some(0),
        "purged {body}, left {}",
        left.body
    );
    let archived = call(
        &app,
        "POST",
        "/archive?box=inbox_events&older_than=0s",
        Some(TOKEN),
    )
    .await;
    assert_eq!(archived.status, StatusCode::OK, "{}", archived.body);
    assert_eq!(archived.json()["archived"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_replay_over_http_backfills_a_new_subscriber() {
    let (store, _file) = sqlite_store().await;
    common::outbox_replay::outbox_replay_over_http_backfills_a_new_subscriber(store, TOKEN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_context_is_written_on_emit_and_continued_by_the_handler() {
    let (store, _file) = sqlite_store().await;
    let app = router(store.clone(), HttpOptions::new().token(TOKEN));
    let bandeja = runtime(store.clone(), Flaky::default());
    let running = bandeja.start().await.expect("start");
    let incoming = TraceParent::new_root();
    let event = order(11);
    trace::scope(incoming, bandeja.emit(&event))
        .await
        .expect("emit");
    let untraced = order(12);
    bandeja.emit(&untraced).await.expect("emit");
    wait_for_status(
        &store,
        BoxKind::InboxEvents,
        event.id,
        MessageStatus::Completed,
    )
    .await;
    wait_for_status(
        &store,
        BoxKind::InboxEvents,
        untraced.id,
        MessageStatus::Completed,
    )
    .await;

    let trace_of = |value: &serde_json::Value| {
        value["headers"]["traceparent"]
            .as_str()
            .and_then(TraceParent::parse)
            .unwrap_or_else(|| panic!("no valid traceparent in {value}"))
    };
    let shown = call(&app, "GET", &format!("/messages/{}", event.id), Some(TOKEN))
        .await
        .json();
    let emitted = trace_of(&shown["rows"][0]);
    assert_eq!(
        emitted.trace_id, incoming.trace_id,
        "emission continues the current trace"
    );
    assert_ne!(emitted.span_id, incoming.span_id);

    let shipped = call(
        &app,
        "GET",
        "/messages?type=http_test.OrderShipped&box=outbox_events",
        Some(TOKEN),
    )
    .await
    .json();
    let follow_up = shipped["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["headers"]["causation_id"] == event.id.to_string())
        .cloned()
        .expect("the handler's follow-up event");
    let continued = trace_of(&follow_up);
    assert_eq!(
        continued.trace_id, incoming.trace_id,
        "the handler continues the trace"
    );
    assert_eq!(follow_up["headers"]["correlation_id"], "checkout-11");

    let other = call(
        &app,
        "GET",
        &format!("/messages/{}", untraced.id),
        Some(TOKEN),
    )
    .await
    .json();
    assert_ne!(
        trace_of(&other["rows"][0]).trace_id,
        incoming.trace_id,
        "a new trace outside any scope"
    );
    running.shutdown().await;
}
