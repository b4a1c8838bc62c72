//! SQLite has a single writer: a slow handler must not hold it. While the notification
//! handler waits (before writing), new orders are still accepted quickly.

mod common;

use std::time::{Duration, Instant};

use common::{
    inbox_row, open_sqlite, order_id, place_order, rows_for_order, wait_for, Shop, TempDir,
};

#[tokio::test]
async fn orders_are_accepted_quickly_while_a_slow_handler_is_waiting() {
    let dir = TempDir::new("slow-handler");
    let database = dir.sqlite_url("shop.db");
    let shop = Shop::start(
        &database,
        &[("SHOP_NOTIFICATION_DELAY", "10s")],
        &dir.path().join("shop.log"),
    );
    let client = reqwest::Client::new();
    let db = open_sqlite(&database).await;

    let first = order_id(&place_order(&client, &shop, "alice", &[("MS-001", 1)]).await);
    wait_for(
        "the notification row PROCESSING",
        Duration::from_secs(20),
        || async {
            inbox_row(&db, first, "notification")
                .await
                .filter(|row| row.0 == "PROCESSING")
        },
    )
    .await;

    for n in 0..5 {
        let started = Instant::now();
        place_order(&client, &shop, "bob", &[("MS-001", 1)]).await;
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(1),
            "order {n} took {took:?} while the handler waited"
        );
    }

    // The handler was still in its pause the whole time.
    assert_eq!(
        inbox_row(&db, first, "notification")
            .await
            .map(|row| row.0)
            .as_deref(),
        Some("PROCESSING")
    );
    assert_eq!(rows_for_order(&db, "sent_emails", first).await, 0);
}
