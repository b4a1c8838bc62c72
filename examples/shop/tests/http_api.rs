//! The HTTP API on SQLite: the happy path end to end (order → stock taken, email recorded),
//! a shortage, and bad requests (4xx with a JSON error, nothing written).

mod common;

use std::time::Duration;

use serde_json::{json, Value};

use common::{
    count_rows, inbox_row, open_sqlite, order_id, place_order, post_order, rows_for_order, stock,
    wait_for, Shop, TempDir,
};

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn orders_take_stock_send_an_email_and_bad_requests_write_nothing() {
    let dir = TempDir::new("http-api");
    let database = dir.sqlite_url("shop.db");
    let shop = Shop::start(&database, &[], &dir.path().join("shop.log"));
    let client = reqwest::Client::new();
    let db = open_sqlite(&database).await;

    // Happy path.
    let before = stock(&client, &shop, "MS-001").await;
    let order = place_order(&client, &shop, "alice", &[("MS-001", 3)]).await;
    let id = order_id(&order);
    assert_eq!(order["customer"], "alice");
    assert_eq!(order["status"], "CONFIRMED");
    assert_eq!(order["total"], "89.70");
    assert_eq!(
        order["lines"],
        json!([{ "sku": "MS-001", "product_name": "Wireless mouse", "quantity": 3, "unit_price": "29.90" }])
    );
    let fetched: Value = client
        .get(shop.url(&format!("/orders/{id}")))
        .send()
        .await
        .expect("GET /orders/{id}")
        .json()
        .await
        .expect("order JSON");
    assert_eq!(fetched, order);

    let after = wait_for("the stock of MS-001 to go down", WAIT, || async {
        let now = stock(&client, &shop, "MS-001").await;
        (now != before).then_some(now)
    })
    .await;
    assert_eq!(after, before - 3);
    wait_for("the confirmation email", WAIT, || async {
        (rows_for_order(&db, "sent_emails", id).await == 1).then_some(())
    })
    .await;
    let (recipient, subject, body): (String, String, String) =
        sqlx::query_as("SELECT recipient, subject, body FROM sent_emails WHERE order_id = ?")
            .bind(id)
            .fetch_one(&db)
            .await
            .expect("the email");
    assert_eq!(recipient, "alice@example.com");
    assert_eq!(subject, format!("Order #{id} confirmed"));
    assert!(
        body.contains("3 x Wireless mouse") && body.contains("89.70"),
        "{body}"
    );

    // Shortage: accepted, logged by inventory, which completes without taking stock.
    let shortage = order_id(&place_order(&client, &shop, "bob", &[("HD-001", 1)]).await);
    wait_for(
        "the inventory row of the shortage COMPLETED",
        WAIT,
        || async {
            inbox_row(&db, shortage, "inventory")
                .await
                .filter(|row| row.0 == "COMPLETED")
        },
    )
    .await;
    assert_eq!(stock(&client, &shop, "HD-001").await, 0);
    assert_eq!(rows_for_order(&db, "stock_movements", shortage).await, 0);

    // Not found.
    for path in ["/orders/999999", "/orders/abc", "/stock/NOPE-1"] {
        let response = client.get(shop.url(path)).send().await.expect("GET");
        assert_eq!(response.status(), 404, "{path}");
        let body: Value = response.json().await.expect("JSON error");
        assert!(body["error"].is_string(), "{path}: {body}");
    }

    // Bad requests: 4xx, a JSON error, nothing written.
    let orders = count_rows(&db, "orders").await;
    let outbox = count_rows(&db, "outbox_events").await;
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
        let response = post_order(&client, &shop, body).await;
        assert_client_error(case, response).await;
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
        let response = client
            .post(shop.url("/orders"))
            .header("content-type", content_type)
            .body(raw)
            .send()
            .await
            .expect("POST /orders");
        assert_client_error(case, response).await;
    }
    assert_eq!(count_rows(&db, "orders").await, orders, "no order written");
    assert_eq!(
        count_rows(&db, "outbox_events").await,
        outbox,
        "no event written"
    );
}

async fn assert_client_error(case: &str, response: reqwest::Response) {
    let status = response.status();
    assert!(status.is_client_error(), "{case}: status {status}");
    let body: Value = response
        .json()
        .await
        .unwrap_or_else(|e| panic!("{case}: body is not JSON: {e}"));
    let message = body["error"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "{case}: no error message in {body}");
}
