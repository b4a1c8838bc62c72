//! `GET /sagas` and `GET /sagas/{id}` over a real SQLite store after a real saga ran (an
//! order whose stock ran short after the payment, so the charge was refunded), and the
//! dashboard's Sagas panel in Chromium listing it and showing its history.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use bandeja_conformance::fixtures::saga::{run_order_saga, Answer, Participants};
use bandeja_core::saga::SagaStatus;
use bandeja_http::{router, HttpOptions};
use common::browser::{chromedriver, click, open, serve_router, wait_text, DESKTOP};
use common::{call, sqlite_store};

const TOKEN: &str = "s3cret-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sagas_are_listed_newest_first_and_one_shows_its_history() {
    let (store, _file) = sqlite_store().await;
    let participants = Participants::new(&[("reserve", &[Answer::Refuse])], Duration::ZERO);
    let saga = run_order_saga(&store, &participants, Duration::from_secs(30)).await;
    assert_eq!(saga.status, SagaStatus::Compensated);
    let app = router(store.clone(), HttpOptions::new().token(TOKEN));

    let listed = call(&app, "GET", "/sagas", Some(TOKEN)).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let body = listed.json();
    let sagas = body["sagas"].as_array().cloned().unwrap_or_default();
    assert_eq!(sagas.len(), 1, "{body}");
    assert_eq!(sagas[0]["id"], saga.id.to_string());
    assert_eq!(sagas[0]["saga_type"], "order");
    assert_eq!(sagas[0]["status"], "COMPENSATED");
    assert!(
        sagas[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("out of stock")),
        "{body}"
    );
    let none = call(&app, "GET", "/sagas?status=completed", Some(TOKEN)).await;
    assert_eq!(none.json()["sagas"], serde_json::json!([]));

    let shown = call(&app, "GET", &format!("/sagas/{}", saga.id), Some(TOKEN)).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    let history = shown.json()["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let compensated = history
        .iter()
        .any(|e| e["phase"] == "compensation" && e["kind"] == "succeeded" && e["step"] == "charge");
    assert!(compensated, "the refund is in the history: {history:#?}");

    let unknown = call(
        &app,
        "GET",
        &format!("/sagas/{}", bandeja_core::saga::SagaId::new()),
        Some(TOKEN),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let bad_id = call(&app, "GET", "/sagas/order-7", Some(TOKEN)).await;
    assert_eq!(bad_id.status, StatusCode::BAD_REQUEST);
    assert!(bad_id.body.contains("not a saga id"), "{}", bad_id.body);
    let bad_status = call(&app, "GET", "/sagas?status=done", Some(TOKEN)).await;
    assert_eq!(bad_status.status, StatusCode::BAD_REQUEST);
    assert!(
        bad_status.body.contains("compensated"),
        "{}",
        bad_status.body
    );
    let no_token = call(&app, "GET", "/sagas", None).await;
    assert_eq!(no_token.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sagas_panel_lists_a_saga_and_shows_its_history() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let participants = Participants::new(&[("reserve", &[Answer::Refuse])], Duration::ZERO);
    let saga = run_order_saga(&store, &participants, Duration::from_secs(30)).await;
    let served = serve_router(store.clone(), "").await;
    let client = open(&driver, DESKTOP, &served.dashboard()).await;
    let row = format!("#sagas tr[data-saga=\"{}\"]", saga.id);
    let status = wait_text(&client, &format!("{row} td.status"), |t| !t.is_empty()).await;
    assert_eq!(status, "COMPENSATED");
    click(&client, &format!("{row} button.link")).await;
    let history = wait_text(&client, "#saga-history", |t| t.contains("compensation")).await;
    assert!(
        history.contains("charge") && history.contains("out of stock"),
        "{history}"
    );
    client.close().await.expect("close the browser");
    served.stop().await;
}
