//! The inventory module alone, in the `Scenario` style of Spring Modulith's
//! `@ApplicationModuleTest`: no order module, no HTTP; the test publishes the event as if
//! the order module had, and waits for the state change.

use std::time::Duration;

use bandeja::sqlite::SqliteStore;
use bandeja::testing::Scenario;
use bandeja::{Bandeja, Event, Store};
use chrono::Utc;

use shop::inventory::{self, InventoryHandler};
use shop::money::Money;
use shop::order::{ConfirmedLine, OrderConfirmed};

#[tokio::test]
async fn order_confirmed_takes_the_ordered_units_out_of_stock(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("shop-inventory-module-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    let store =
        SqliteStore::connect(&format!("sqlite://{}", dir.join("shop.db").display())).await?;
    store.migrate().await?;
    shop::db::migrate(&store).await?;
    let bandeja = Bandeja::builder(store.clone())
        .config(shop::config::shop_defaults(Duration::ZERO))
        .on_event::<OrderConfirmed, _>(inventory::SUBSCRIBER, InventoryHandler)
        .build()?;
    let running = bandeja.start().await?;

    let stock_of = |sku: &'static str| {
        let store = store.clone();
        async move {
            inventory::stock_of(&store, sku)
                .await
                .expect("read the stock")
        }
    };
    let before = stock_of("MS-001").await.ok_or("MS-001 is not in stock")?;
    let event = OrderConfirmed {
        order_id: 42,
        customer: "alice".into(),
        lines: vec![ConfirmedLine {
            sku: "MS-001".into(),
            product_name: "Wireless mouse".into(),
            quantity: 3,
        }],
        total: Money::from_cents(8970),
        confirmed_at: Utc::now(),
    };

    Scenario::new(&bandeja)
        .publish(Event::new("Order", "42", event))
        .await?
        .and_wait_for_state_change(|| stock_of("MS-001"), |stock| *stock != Some(before))
        .await?
        .and_verify(|stock| assert_eq!(*stock, Some(before - 3)));

    let movements: i64 =
        sqlx::query_scalar("SELECT count(*) FROM stock_movements WHERE order_id = 42")
            .fetch_one(store.pool())
            .await?;
    assert_eq!(movements, 1);

    running.shutdown().await;
    store.pool().close().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
