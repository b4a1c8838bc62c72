//! A version 1 `OrderConfirmed` (no `currency`), written as a producer deployed before
//! version 2 writes it, is read by today's notification handler through the event's
//! upcaster: one email, its total in euros; and the stored row keeps its version 1 JSON
//! (stored messages are never rewritten).

mod common;

use std::time::Duration;

use bandeja::{Bandeja, Event, MessageRecord, Payload};
use chrono::Utc;
use common::in_process::App;
use common::rows_for_order;
use shop::money::Money;
use shop::order::{ConfirmedLine, OrderConfirmed, OrderConfirmedV1};

const ORDER: i64 = 9_001;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_order_confirmed_is_read_through_its_upcaster_and_kept_as_written() {
    let app = App::start("old-events", Duration::ZERO).await;
    let old = OrderConfirmedV1 {
        order_id: ORDER,
        customer: "carol".to_owned(),
        lines: vec![ConfirmedLine {
            sku: "MS-001".to_owned(),
            product_name: "Wireless mouse".to_owned(),
            quantity: 1,
        }],
        total: Money::from_cents(2_990),
        confirmed_at: Utc::now(),
    };
    let record = MessageRecord::from_event(&Event::new("Order", ORDER.to_string(), old))
        .expect("encode the version 1 event");
    assert_eq!(record.schema_version, 1);
    assert_eq!(OrderConfirmed::VERSION, 2, "the handler's version is newer");
    // An emitting-only runtime on the same database: the old producer.
    let outbox = Bandeja::builder(app.store().clone())
        .build()
        .expect("an emitting-only bandeja")
        .outbox();
    let mut tx = app.pool().begin().await.expect("begin");
    outbox
        .emit_records(&mut *tx, vec![record])
        .await
        .expect("emit the version 1 event");
    tx.commit().await.expect("commit");

    let body: String = bandeja::testing::eventually(Duration::from_secs(30), || async {
        sqlx::query_scalar("SELECT body FROM sent_emails WHERE order_id = ?1")
            .bind(ORDER)
            .fetch_optional(app.pool())
            .await
            .ok()?
    })
    .await
    .expect("the notification handler sent the email");
    assert_eq!(
        body,
        "Thanks for your order: 1 x Wireless mouse. Total: 29.90 EUR."
    );
    assert_eq!(rows_for_order(app.pool(), "sent_emails", ORDER).await, 1);

    let (version, payload): (i64, String) = sqlx::query_as(
        "SELECT schema_version, payload FROM inbox_events WHERE subscriber = 'notification' \
         AND message_type = ?1",
    )
    .bind(OrderConfirmed::TYPE)
    .fetch_one(app.pool())
    .await
    .expect("the notification's inbox row");
    assert_eq!(version, 1, "the row keeps the version it was written with");
    let stored: serde_json::Value = serde_json::from_str(&payload).expect("JSON");
    assert!(
        stored.get("currency").is_none(),
        "the stored JSON is not rewritten: {stored}"
    );
}
