//! The shop as five services over a broker (the README's "Separate services" commands):
//! `order` (which orchestrates the order saga), `billing`, `inventory`, `shipping` and
//! `notification`, each a process with its own SQLite database. An order placed on the
//! order service is charged in billing's database, reserved in inventory's, shipped in
//! shipping's and emailed in notification's, once each, and ends COMPLETED; a shortage is
//! refunded in billing's database and ends COMPENSATED.

use std::time::Duration;

use super::{
    open_sqlite, order_id, place_order, rows_for_order, wait_for, wait_for_status, Shop, TempDir,
};

const WAIT: Duration = Duration::from_secs(30);

/// Runs the five services with the broker variables `broker` (`SHOP_NATS_URL`, …) and
/// checks the happy path and the shortage.
pub(crate) async fn run(broker: &[(&'static str, String)]) {
    let dir = TempDir::new("services");
    let prefix = format!("shop{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let start = |service: &str| {
        let database = dir.sqlite_url(&format!("{service}.db"));
        let mut env: Vec<(&str, &str)> =
            vec![("SHOP_SERVICE", service), ("SHOP_BROKER_PREFIX", &prefix)];
        env.extend(broker.iter().map(|(name, value)| (*name, value.as_str())));
        let shop = Shop::start(&database, &env, &dir.path().join(format!("{service}.log")));
        (shop, database)
    };
    let (inventory, inventory_db) = start("inventory");
    let (_billing, billing_db) = start("billing");
    let (_shipping, shipping_db) = start("shipping");
    let (_notification, notification_db) = start("notification");
    let (order, order_db) = start("order");
    let client = reqwest::Client::new();
    let [billing_db, inventory_db, shipping_db, notification_db, order_db] = [
        open_sqlite(&billing_db).await,
        open_sqlite(&inventory_db).await,
        open_sqlite(&shipping_db).await,
        open_sqlite(&notification_db).await,
        open_sqlite(&order_db).await,
    ];

    // The happy path: charged, reserved, shipped, emailed, once each, in each service.
    let before = super::stock(&client, &inventory, "MS-001").await;
    let happy = order_id(&place_order(&client, &order, "alice", &[("MS-001", 2)]).await);
    let done = wait_for_status(&client, &order, happy, "COMPLETED", WAIT).await;
    assert_eq!(done["step"], "ship", "{done}");
    assert_eq!(rows_for_order(&billing_db, "charges", happy).await, 1);
    assert_eq!(rows_for_order(&billing_db, "refunds", happy).await, 0);
    assert_eq!(
        super::stock(&client, &inventory, "MS-001").await,
        before - 2
    );
    assert_eq!(
        rows_for_order(&inventory_db, "stock_movements", happy).await,
        1
    );
    assert_eq!(rows_for_order(&shipping_db, "shipments", happy).await, 1);
    wait_for("the notification service's email", WAIT, || async {
        (rows_for_order(&notification_db, "sent_emails", happy).await == 1).then_some(())
    })
    .await;

    // A shortage after payment: refunded in billing's database, nothing reserved or shipped.
    let short = order_id(&place_order(&client, &order, "bob", &[("HD-001", 1)]).await);
    let ended = wait_for_status(&client, &order, short, "COMPENSATED", WAIT).await;
    let reason = ended["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("HD-001 (requested 1, available 0)"),
        "{ended}"
    );
    assert_eq!(rows_for_order(&billing_db, "charges", short).await, 1);
    assert_eq!(rows_for_order(&billing_db, "refunds", short).await, 1);
    assert_eq!(
        rows_for_order(&inventory_db, "stock_movements", short).await,
        0
    );
    assert_eq!(rows_for_order(&shipping_db, "shipments", short).await, 0);

    // Each service keeps its own tables: the order's database recorded no charge, movement,
    // shipment or email (it keeps the sagas), and it does not serve the inventory's routes.
    for table in ["charges", "stock_movements", "shipments", "sent_emails"] {
        assert_eq!(rows_for_order(&order_db, table, happy).await, 0, "{table}");
    }
    let sagas: i64 = sqlx::query_scalar("SELECT count(*) FROM sagas")
        .fetch_one(&order_db)
        .await
        .expect("count the sagas");
    assert_eq!(sagas, 2);
    let wrong = client
        .get(order.url("/stock/MS-001"))
        .send()
        .await
        .expect("GET /stock on the order service");
    assert_eq!(wrong.status(), 404);
}
