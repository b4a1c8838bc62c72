//! The router over a real PostgreSQL store (a schema per test) with real traffic: health,
//! counters, metrics, a FAILED message retried over HTTP and completed by the worker; and
//! health DOWN when the database cannot be reached.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use bandeja_core::{BoxKind, MessageStatus};
use bandeja_http::{router, HttpOptions};
use bandeja_postgres::PgStore;
use common::{
    assert_database_down, assert_taken_over_shown, call, free_port, order, pg_store, runtime,
    two_rows_taken_over, wait_for_status, Flaky,
};

const TOKEN: &str = "pg-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_health_boxes_metrics_and_retry_over_http() {
    let Some((store, _schema)) = pg_store().await else {
        return;
    };
    let handle = bandeja_http::metrics::install_recorder().expect("recorder");
    let app = router(
        store.clone(),
        HttpOptions::new().token(TOKEN).metrics(handle),
    );
    let bandeja = runtime(store.clone(), Flaky::failing(&[2]));
    let running = bandeja.start().await.expect("start");
    let (ok, poisoned) = (order(1), order(2));
    bandeja.emit(&ok).await.expect("emit");
    bandeja.emit(&poisoned).await.expect("emit");
    wait_for_status(
        &store,
        BoxKind::InboxEvents,
        ok.id,
        MessageStatus::Completed,
    )
    .await;
    wait_for_status(
        &store,
        BoxKind::InboxEvents,
        poisoned.id,
        MessageStatus::Failed,
    )
    .await;

    let health = call(&app, "GET", "/health", None).await;
    assert_eq!(health.status, StatusCode::OK, "{}", health.body);
    assert_eq!(health.json()["status"], "UP");

    let boxes = call(&app, "GET", "/boxes", None).await.json();
    let inbox = boxes["boxes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["box"] == "inbox_events")
        .cloned()
        .expect("inbox_events counters");
    assert_eq!(inbox["failed"], 1, "{inbox}");
    assert!(inbox["last_processed_at"].is_string(), "{inbox}");

    let metrics = call(&app, "GET", "/metrics", None).await.body;
    for needle in [
        "bandeja_messages_handled_total{box=\"inbox_events\",type=\"http_test.OrderPlaced\",subscriber=\"billing\"}",
        "bandeja_messages_failed_total{box=\"inbox_events\",type=\"http_test.OrderPlaced\",subscriber=\"billing\"}",
        // The one-statement relay reports each row it published: per type, with latency.
        "bandeja_messages_published_total{box=\"outbox_events\",type=\"http_test.OrderPlaced\"} 2",
        "bandeja_commit_to_published_seconds_count{box=\"outbox_events\",type=\"http_test.OrderPlaced\"} 2",
        "bandeja_box_rows{box=\"inbox_events\",status=\"FAILED\"} 1",
        "bandeja_database_up 1",
    ] {
        assert!(metrics.contains(needle), "missing {needle}:\n{metrics}");
    }

    let listed = call(&app, "GET", "/messages?status=FAILED", Some(TOKEN))
        .await
        .json();
    assert_eq!(listed["messages"][0]["id"], poisoned.id.to_string());
    let retried = call(
        &app,
        "POST",
        &format!("/messages/{}/retry", poisoned.id),
        Some(TOKEN),
    )
    .await;
    assert_eq!(retried.status, StatusCode::OK, "{}", retried.body);
    wait_for_status(
        &store,
        BoxKind::InboxEvents,
        poisoned.id,
        MessageStatus::Completed,
    )
    .await;
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rows_taken_over_are_counted_per_box_and_shown_apart_from_retries() {
    let Some((store, _schema)) = pg_store().await else {
        return;
    };
    let app = router(store.clone(), HttpOptions::new().token(TOKEN));
    let rows = two_rows_taken_over(&store).await;
    assert_taken_over_shown(&app, Some(TOKEN), rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_health_is_down_when_the_database_cannot_be_reached() {
    // Make sure PostgreSQL itself is there (CI fails otherwise), then point a store at a
    // port nobody listens on.
    let Some((_store, _schema)) = pg_store().await else {
        return;
    };
    let port = free_port();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .acquire_timeout(Duration::from_secs(2))
        .connect_lazy(&format!("postgres://postgres@127.0.0.1:{port}/test"))
        .expect("a lazy pool");
    let unreachable = PgStore::from_pool(pool, None).expect("store");
    let app = router(
        unreachable,
        HttpOptions::new().health_timeout(Duration::from_secs(5)),
    );
    assert_database_down(&call(&app, "GET", "/health", None).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outbox_replay_over_http_backfills_a_new_subscriber() {
    let Some((store, _schema)) = pg_store().await else {
        return;
    };
    common::outbox_replay::outbox_replay_over_http_backfills_a_new_subscriber(store, TOKEN).await;
}
