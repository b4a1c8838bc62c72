//! The crash demo, automated: `kill -9` while the notification handler is in the middle of
//! its work (the order's saga has already charged, reserved and shipped it), restart on the
//! same SQLite file, and check that nothing was lost and nothing was applied twice.

mod common;

use std::time::Duration;

use common::{
    get_order, inbox_row, open_sqlite, order_id, place_order, rows_for_order, stock, wait_for,
    Shop, TempDir,
};

/// The demo's settings: a 5 s pause in the notification handler (the window for the kill)
/// and an 8 s inbox lease, so the restarted process takes the row over soon.
const ENV: [(&str, &str); 2] = [
    ("SHOP_NOTIFICATION_DELAY", "5s"),
    ("BANDEJA_EVENTS_INBOX_LOCK_AT_MOST_FOR", "8s"),
];

#[tokio::test]
async fn a_killed_listener_resumes_after_restart_and_the_saga_is_not_run_again() {
    let dir = TempDir::new("crash-demo");
    let database = dir.sqlite_url("shop.db");
    let log = dir.path().join("shop.log");
    let client = reqwest::Client::new();

    let mut shop = Shop::start(&database, &ENV, &log);
    let before = stock(&client, &shop, "KB-001").await;
    let order = place_order(&client, &shop, "alice", &[("KB-001", 1)]).await;
    let id = order_id(&order);
    let db = open_sqlite(&database).await;

    // The saga has finished (charged, reserved, shipped), notification is in the middle of
    // its pause.
    wait_for(
        "the saga COMPLETED and notification PROCESSING",
        Duration::from_secs(20),
        || async {
            let notification = inbox_row(&db, id, "notification").await?;
            let order = get_order(&client, &shop, id).await;
            (order["status"] == "COMPLETED" && notification.0 == "PROCESSING").then_some(())
        },
    )
    .await;
    assert_eq!(
        rows_for_order(&db, "sent_emails", id).await,
        0,
        "no email before the kill"
    );

    shop.kill(); // kill -9
    assert_eq!(
        inbox_row(&db, id, "notification")
            .await
            .map(|r| r.0)
            .as_deref(),
        Some("PROCESSING")
    );

    let shop = Shop::start(&database, &ENV, &log);
    let (status, retry_count) = wait_for(
        "notification COMPLETED after the restart",
        Duration::from_secs(40),
        || async {
            inbox_row(&db, id, "notification")
                .await
                .filter(|row| row.0 == "COMPLETED")
        },
    )
    .await;
    assert_eq!(status, "COMPLETED");
    assert_eq!(
        retry_count, 0,
        "a takeover is not a failed attempt: no retry spent"
    );
    let takeovers: i64 = sqlx::query_scalar(
        "SELECT takeover_count FROM inbox_events WHERE aggregate_id = ? AND subscriber = ?",
    )
    .bind(id.to_string())
    .bind("notification")
    .fetch_one(&db)
    .await
    .expect("read the takeover count");
    assert_eq!(
        takeovers, 1,
        "the notification row was taken over once (its lease expired)"
    );
    assert_eq!(
        rows_for_order(&db, "sent_emails", id).await,
        1,
        "exactly one email"
    );

    // The saga was not run again: one charge, one movement (stock taken once), one
    // shipment, every command handled once and COMPLETED.
    assert_eq!(get_order(&client, &shop, id).await["status"], "COMPLETED");
    for table in ["charges", "stock_movements", "shipments"] {
        assert_eq!(rows_for_order(&db, table, id).await, 1, "{table}");
    }
    assert_eq!(rows_for_order(&db, "refunds", id).await, 0);
    assert_eq!(stock(&client, &shop, "KB-001").await, before - 1);
    let commands: Vec<(String, String)> =
        sqlx::query_as("SELECT subscriber, status FROM inbox_commands ORDER BY seq")
            .fetch_all(&db)
            .await
            .expect("read inbox_commands");
    let expected = [
        "billing-charge",
        "bandeja-sagas",
        "inventory-reserve",
        "bandeja-sagas",
        "shipping-dispatch",
        "bandeja-sagas",
    ]
    .map(|s| (s.to_owned(), "COMPLETED".to_owned()));
    assert_eq!(commands, expected, "each step and each reply handled once");

    // No row lost: the outbox event was relayed, one inbox row per subscriber.
    let outbox: Vec<(String, String)> =
        sqlx::query_as("SELECT id, status FROM outbox_events WHERE aggregate_id = ?")
            .bind(id.to_string())
            .fetch_all(&db)
            .await
            .expect("read outbox_events");
    assert_eq!(outbox.len(), 1, "one outbox row for the order");
    assert_eq!(outbox[0].1, "COMPLETED");
    let inbox: Vec<(String, String)> = sqlx::query_as(
        "SELECT subscriber, status FROM inbox_events WHERE id = ? ORDER BY subscriber",
    )
    .bind(&outbox[0].0)
    .fetch_all(&db)
    .await
    .expect("read inbox_events");
    let expected = [("notification".to_owned(), "COMPLETED".to_owned())];
    assert_eq!(inbox, expected);
}
