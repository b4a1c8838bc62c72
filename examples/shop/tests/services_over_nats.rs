//! The shop as three services over NATS JetStream (the README's "Separate services"
//! commands): `order`, `inventory` and `notification`, each a process with its own SQLite
//! database. An order placed on the order service takes stock in the inventory service's
//! database and records one email in the notification service's, exactly once each.
//! Uses the local NATS server (`NATS_URL`, default `nats://127.0.0.1:4222`); fails if it is
//! unreachable.

mod common;

use std::time::Duration;

use common::{open_sqlite, order_id, place_order, rows_for_order, wait_for, Shop, TempDir};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn an_order_reaches_inventory_and_notification_services_once() {
    let nats = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
    let dir = TempDir::new("services");
    let prefix = format!("shop{}", uuid::Uuid::new_v4().simple());
    let start = |service: &str| {
        let database = dir.sqlite_url(&format!("{service}.db"));
        let shop = Shop::start(
            &database,
            &[
                ("SHOP_SERVICE", service),
                ("SHOP_NATS_URL", &nats),
                ("SHOP_NATS_PREFIX", &prefix),
            ],
            &dir.path().join(format!("{service}.log")),
        );
        (shop, database)
    };
    let (inventory, inventory_db) = start("inventory");
    let (_notification, notification_db) = start("notification");
    let (order, order_db) = start("order");
    let client = reqwest::Client::new();

    let before = common::stock(&client, &inventory, "MS-001").await;
    let placed = place_order(&client, &order, "alice", &[("MS-001", 2)]).await;
    let id = order_id(&placed);
    let after = wait_for("the inventory service to take stock", WAIT, || async {
        let now = common::stock(&client, &inventory, "MS-001").await;
        (now != before).then_some(now)
    })
    .await;
    assert_eq!(after, before - 2);
    let notification = open_sqlite(&notification_db).await;
    wait_for("the notification service's email", WAIT, || async {
        (rows_for_order(&notification, "sent_emails", id).await == 1).then_some(())
    })
    .await;
    let inventory_rows = open_sqlite(&inventory_db).await;
    assert_eq!(
        rows_for_order(&inventory_rows, "stock_movements", id).await,
        1
    );
    // Each service keeps its own tables: the order's database recorded no movement and no
    // email, and the order service does not serve the inventory's routes.
    let orders = open_sqlite(&order_db).await;
    assert_eq!(rows_for_order(&orders, "stock_movements", id).await, 0);
    assert_eq!(rows_for_order(&orders, "sent_emails", id).await, 0);
    let wrong = client
        .get(order.url("/stock/MS-001"))
        .send()
        .await
        .expect("GET /stock on the order service");
    assert_eq!(wrong.status(), 404);
}
