//! Fills a SQLite database with a few real messages to try the `bandeja` command on:
//! `cargo run -p bandeja-cli --example demo_data -- sqlite://demo.db`.
//!
//! Four `shop.OrderPlaced` events (three for tenant `acme`, one for `globex`) go through
//! the bandeja runtime to two subscribers: `notification` handles them all, `billing`
//! declines orders over 1000 with a permanent error, so those rows end FAILED.

use std::time::Duration;

use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;
use bandeja_core::{
    Bandeja, BoxKind, Config, Event, EventHandler, HandlerContext, HandlerError, Payload, Store,
    TenantId,
};
use bandeja_sqlite::SqliteStore;

/// An order was placed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct OrderPlaced {
    order_id: String,
    customer: String,
    amount: u32,
}

impl Payload for OrderPlaced {
    const TYPE: &'static str = "shop.OrderPlaced";
}

/// Charges the order; orders over 1000 are declined for good.
#[derive(Clone)]
struct Billing;

impl EventHandler<SqliteStore, OrderPlaced> for Billing {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, SqliteStore>,
        event: Event<OrderPlaced>,
    ) -> Result<(), HandlerError> {
        if event.payload.amount > 1000 {
            return Err(HandlerError::permanent(format!(
                "card declined: {} is over the customer's limit",
                event.payload.amount
            )));
        }
        Ok(())
    }
}

/// Sends the confirmation e-mail (here: nothing).
#[derive(Clone)]
struct Notification;

impl EventHandler<SqliteStore, OrderPlaced> for Notification {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, SqliteStore>,
        _event: Event<OrderPlaced>,
    ) -> Result<(), HandlerError> {
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .ok_or("usage: demo_data sqlite://path/to/file.db")?;
    let store = SqliteStore::connect(&url).await?;
    store.migrate().await?;
    let mut config = Config::default();
    for group in [&mut config.events_outbox, &mut config.events_inbox] {
        group.polling_interval = Duration::from_millis(100);
        group.polling_initial_delay = Duration::ZERO;
    }
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<OrderPlaced, _>("billing", Billing)
        .on_event::<OrderPlaced, _>("notification", Notification)
        .build()?;
    let running = bandeja.start().await?;
    let orders = [
        ("acme", "o-1001", "ada", 250),
        ("acme", "o-1002", "grace", 4200),
        ("acme", "o-1003", "linus", 80),
        ("globex", "o-2001", "barbara", 1500),
    ];
    for (tenant, order_id, customer, amount) in orders {
        let payload = OrderPlaced {
            order_id: order_id.to_owned(),
            customer: customer.to_owned(),
            amount,
        };
        let event = Event::new("Order", order_id, payload)
            .with_tenant(TenantId::new(tenant)?)
            .with_correlation_id(format!("checkout-{order_id}"));
        bandeja.emit(&event).await?;
    }
    let settled = eventually(Duration::from_secs(30), || async {
        let inbox = store.rows(BoxKind::InboxEvents).await.ok()?;
        (inbox.len() == 2 * orders.len() && inbox.iter().all(|r| r.message.status.is_terminal()))
            .then_some(())
    })
    .await;
    running.shutdown().await;
    settled?;
    println!("{url}: {} orders placed and handled", orders.len());
    Ok(())
}
