//! `GET /messages` pages across boxes: one ordering and one cursor, exactly `limit` rows
//! a page, every row reachable, the same pages walking back; `before` needs `box`.

mod common;

use std::collections::HashSet;

use axum::http::StatusCode;
use bandeja_conformance::fixtures::TempDir;
use bandeja_core::{BoxKind, MessageStatus};
use bandeja_http::{router, HttpOptions};
use common::{call, order, runtime, sqlite_store, wait_for_status, Flaky};

/// Six FAILED rows in two boxes: three inbox rows whose handler refused them, and three
/// outbox rows an operator would see FAILED (marked so in the database: the in-process
/// relay never fails).
async fn six_failed_rows() -> (axum::Router, TempDir) {
    let (store, file) = sqlite_store().await;
    let bandeja = runtime(store.clone(), Flaky::failing(&[1, 2, 3]));
    let running = bandeja.start().await.expect("start");
    for n in 1..=3 {
        let event = order(n);
        bandeja.emit(&event).await.expect("emit");
        wait_for_status(
            &store,
            BoxKind::InboxEvents,
            event.id,
            MessageStatus::Failed,
        )
        .await;
    }
    running.shutdown().await;
    let idle = runtime(store.clone(), Flaky::default());
    for n in 4..=6 {
        idle.emit(&order(n)).await.expect("emit");
    }
    sqlx::query(
        "UPDATE outbox_events SET status = 'FAILED', last_error = 'broker refused it' \
         WHERE status = 'PENDING'",
    )
    .execute(store.pool())
    .await
    .expect("mark the outbox rows FAILED");
    let app = router(store, HttpOptions::new());
    (app, file)
}

fn key(row: &serde_json::Value) -> String {
    format!("{}/{}/{}", row["box"], row["id"], row["subscriber"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_rows_in_two_boxes_page_two_at_a_time_and_back() {
    let (app, _file) = six_failed_rows().await;
    let mut pages: Vec<Vec<String>> = Vec::new();
    let mut newer_links = Vec::new();
    let mut uri = "/messages?status=FAILED&limit=2".to_owned();
    loop {
        let reply = call(&app, "GET", &uri, None).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        let body = reply.json();
        assert_eq!(body["total"], 6, "the total counts every page");
        let rows = body["messages"].as_array().expect("rows").clone();
        assert_eq!(rows.len(), 2, "exactly `limit` rows a page: {}", reply.body);
        assert!(rows.iter().all(|r| r["status"] == "FAILED"));
        pages.push(rows.iter().map(key).collect());
        newer_links.push(body["newer"].as_str().map(str::to_owned));
        match body["older"].as_str() {
            Some(cursor) => uri = format!("/messages?status=FAILED&limit=2&cursor={cursor}"),
            None => break,
        }
        assert!(pages.len() <= 3, "six rows take three pages: {pages:?}");
    }
    assert_eq!(pages.len(), 3, "{pages:?}");
    let all: HashSet<&String> = pages.iter().flatten().collect();
    assert_eq!(
        all.len(),
        6,
        "every FAILED row is reachable once: {pages:?}"
    );
    let boxes: HashSet<&str> = all
        .iter()
        .map(|k| k.split('/').next().unwrap_or(""))
        .collect();
    assert_eq!(boxes.len(), 2, "rows of both boxes: {boxes:?}");
    assert!(newer_links[0].is_none(), "the first page has no newer page");
    for n in (1..pages.len()).rev() {
        let cursor = newer_links[n].as_deref().expect("a later page links back");
        let reply = call(
            &app,
            "GET",
            &format!("/messages?status=FAILED&limit=2&cursor={cursor}"),
            None,
        )
        .await;
        let rows = reply.json()["messages"].as_array().expect("rows").clone();
        let keys: Vec<String> = rows.iter().map(key).collect();
        assert_eq!(keys, pages[n - 1], "page {n} leads back to page {}", n - 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seq_needs_its_box_and_a_bad_cursor_is_named() {
    let (app, _file) = six_failed_rows().await;
    let reply = call(&app, "GET", "/messages?before=5", None).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(reply.body.contains("give `box` with it"), "{}", reply.body);
    let reply = call(
        &app,
        "GET",
        "/messages?box=outbox_events&before=5&limit=10",
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let rows = reply.json()["messages"].as_array().expect("rows").clone();
    assert_eq!(rows.len(), 4, "outbox rows 1 to 4: {}", reply.body);
    assert!(rows.iter().all(|r| r["box"] == "outbox_events"));
    let uncounted = call(
        &app,
        "GET",
        "/messages?status=FAILED&limit=2&total=false",
        None,
    )
    .await;
    let body = uncounted.json();
    assert!(
        body["total"].is_null(),
        "total=false skips the count: {body}"
    );
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(2));
    let reply = call(&app, "GET", "/messages?cursor=o.1.2", None).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(reply.body.contains("`cursor`"), "{}", reply.body);
    assert!(reply.body.contains("o.1.2"), "{}", reply.body);
}
