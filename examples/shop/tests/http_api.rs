//! The HTTP API on SQLite, with the router called in process (`oneshot`) and bandeja's
//! workers running in the test: the order saga's happy path end to end (order → charged,
//! reserved, shipped once each, COMPLETED; email recorded), a shortage after payment (the
//! charge refunded, COMPENSATED), unknown resources (404) and bad requests (4xx with a
//! JSON error, nothing written).

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{json, Value};

use common::in_process::App;
use common::{count_rows, order_id, rows_for_order, wait_for};

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_is_charged_reserved_and_shipped_once_by_its_saga_and_sends_one_email() {
    let app = App::start("http-order", Duration::ZERO).await;

    let before = app.stock("MS-001").await;
    let order = app.place_order("alice", &[("MS-001", 3)]).await;
    let id = order_id(&order);
    assert_eq!(order["customer"], "alice");
    assert_eq!(order["status"], "PROCESSING", "{order}");
    assert_eq!(order["step"], "charge", "{order}");
    assert!(order["saga_id"].is_string(), "{order}");
    assert_eq!(order["total"], "89.70");
    assert_eq!(
        order["lines"],
        json!([{ "sku": "MS-001", "product_name": "Wireless mouse", "quantity": 3, "unit_price": "29.90" }])
    );

    let done = app.wait_for_status(id, "COMPLETED", WAIT).await;
    assert_eq!(done["step"], "ship", "{done}");
    assert_eq!(done["saga_id"], order["saga_id"]);
    assert_eq!(done["lines"], order["lines"]);
    assert!(done.get("reason").is_none(), "{done}");

    // Each step applied once: one charge of the total, stock taken once, one shipment.
    let charged: Vec<(i64,)> =
        sqlx::query_as("SELECT amount_cents FROM charges WHERE order_id = ?")
            .bind(id)
            .fetch_all(app.pool())
            .await
            .expect("the charges");
    assert_eq!(charged, [(8970,)]);
    assert_eq!(rows_for_order(app.pool(), "refunds", id).await, 0);
    assert_eq!(app.stock("MS-001").await, before - 3);
    assert_eq!(rows_for_order(app.pool(), "stock_movements", id).await, 1);
    assert_eq!(rows_for_order(app.pool(), "shipments", id).await, 1);

    wait_for("the confirmation email", WAIT, || async {
        (rows_for_order(app.pool(), "sent_emails", id).await == 1).then_some(())
    })
    .await;
    let (recipient, subject, body): (String, String, String) =
        sqlx::query_as("SELECT recipient, subject, body FROM sent_emails WHERE order_id = ?")
            .bind(id)
            .fetch_one(app.pool())
            .await
            .expect("the email");
    assert_eq!(recipient, "alice@example.com");
    assert_eq!(subject, format!("Order #{id} confirmed"));
    assert!(
        body.contains("3 x Wireless mouse") && body.contains("89.70"),
        "{body}"
    );
}

/// A shortage at `reserve` is refused: the saga refunds the charge (a refund row beside
/// the charge row), takes no stock (not even of the line in stock: all or none) and ships
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shortage_after_payment_refunds_the_charge_and_takes_no_stock() {
    let app = App::start("http-shortage", Duration::ZERO).await;

    let mice = app.stock("MS-001").await;
    let order = app
        .place_order("bob", &[("MS-001", 1), ("HD-001", 1)])
        .await;
    let id = order_id(&order);
    let ended = app.wait_for_status(id, "COMPENSATED", WAIT).await;
    let reason = ended["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("HD-001 (requested 1, available 0)"),
        "the reason names the sku, requested and available: {ended}"
    );

    let charges: Vec<(i64, i64)> =
        sqlx::query_as("SELECT id, amount_cents FROM charges WHERE order_id = ?")
            .bind(id)
            .fetch_all(app.pool())
            .await
            .expect("the charges");
    let refunds: Vec<(i64, i64)> =
        sqlx::query_as("SELECT charge_id, amount_cents FROM refunds WHERE order_id = ?")
            .bind(id)
            .fetch_all(app.pool())
            .await
            .expect("the refunds");
    assert_eq!(charges, [(charges[0].0, 7980)], "one charge, kept");
    assert_eq!(
        refunds, charges,
        "one refund of that charge, for its amount"
    );
    assert_eq!(app.stock("HD-001").await, 0);
    assert_eq!(app.stock("MS-001").await, mice, "all lines or none");
    assert_eq!(rows_for_order(app.pool(), "stock_movements", id).await, 0);
    assert_eq!(rows_for_order(app.pool(), "shipments", id).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_orders_and_products_answer_404_with_a_json_error() {
    let app = App::start("http-not-found", Duration::ZERO).await;

    for path in ["/orders/999999", "/orders/abc", "/stock/NOPE-1"] {
        let (status, body) = app.get(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(body["error"].is_string(), "{path}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_answer_4xx_with_a_json_error_and_write_nothing() {
    let app = App::start("http-bad-requests", Duration::ZERO).await;

    let orders = count_rows(app.pool(), "orders").await;
    let outbox = count_rows(app.pool(), "outbox_events").await;
    let sagas = count_rows(app.pool(), "sagas").await;
    let item = |sku: &str, quantity: i64| json!({ "sku": sku, "quantity": quantity });
    let bad_bodies = [
        (
            "unknown sku",
            json!({ "customer": "alice", "items": [item("XX-999", 1)] }),
        ),
        (
            "zero quantity",
            json!({ "customer": "alice", "items": [item("MS-001", 0)] }),
        ),
        (
            "negative quantity",
            json!({ "customer": "alice", "items": [item("MS-001", -2)] }),
        ),
        ("empty items", json!({ "customer": "alice", "items": [] })),
        (
            "empty customer",
            json!({ "customer": "", "items": [item("MS-001", 1)] }),
        ),
        (
            "blank customer",
            json!({ "customer": "  ", "items": [item("MS-001", 1)] }),
        ),
        ("missing items", json!({ "customer": "alice" })),
        ("missing customer", json!({ "items": [item("MS-001", 1)] })),
        ("an array, not an object", json!([item("MS-001", 1)])),
        (
            "fractional quantity",
            json!({ "customer": "alice", "items": [{ "sku": "MS-001", "quantity": 1.5 }] }),
        ),
    ];
    for (case, body) in &bad_bodies {
        assert_client_error(case, app.post_order(body).await);
    }
    for (case, raw, content_type) in [
        (
            "malformed JSON",
            "{\"customer\": \"alice\", \"items\": [",
            "application/json",
        ),
        ("not JSON at all", "customer=alice", "application/json"),
        (
            "no JSON content type",
            "{\"customer\":\"alice\",\"items\":[]}",
            "text/plain",
        ),
    ] {
        assert_client_error(case, app.post("/orders", content_type, raw).await);
    }
    assert_eq!(
        count_rows(app.pool(), "orders").await,
        orders,
        "no order written"
    );
    assert_eq!(
        count_rows(app.pool(), "outbox_events").await,
        outbox,
        "no event written"
    );
    assert_eq!(
        count_rows(app.pool(), "sagas").await,
        sagas,
        "no saga started"
    );
}

/// A 4xx status and a JSON body with a non-empty `error`.
fn assert_client_error(case: &str, (status, body): (StatusCode, Value)) {
    assert!(status.is_client_error(), "{case}: status {status}");
    let message = body["error"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "{case}: no error message in {body}");
}
