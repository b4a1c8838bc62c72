//! The order use cases: place an order (one transaction: order, lines, outbox) and read one.

use chrono::{SubsecRound, Utc};

use bandeja::Outbox;

use super::command::{OrderError, PlaceOrder};
use super::model::{Order, OrderLine};
use super::repository;
use crate::catalog;
use crate::ShopDb;

/// Why placing an order failed.
#[derive(Debug, thiserror::Error)]
pub enum PlaceOrderError {
    /// The request breaks a rule: nothing was written.
    #[error(transparent)]
    Rejected(#[from] OrderError),
    /// The database failed: the transaction was rolled back.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The outbox refused the event: the transaction was rolled back.
    #[error("outbox error: {0}")]
    Outbox(#[from] bandeja::Error),
}

/// Places an order: checks the request, prices it from the catalog (a direct call: no
/// price, no order), then in **one transaction** inserts the order and its lines and
/// drains the aggregate's [`OrderConfirmed`](super::OrderConfirmed) into the outbox. After
/// the commit bandeja delivers the event to every subscriber, whatever crashes afterwards.
pub async fn place_order<D: ShopDb>(
    db: &D,
    outbox: &Outbox<D>,
    request: PlaceOrder,
) -> Result<Order, PlaceOrderError> {
    request.validate()?;
    let mut lines = Vec::with_capacity(request.items.len());
    for item in request.items {
        let product = catalog::find_product(db, &item.sku)
            .await?
            .ok_or_else(|| OrderError::UnknownProduct(item.sku.chars().take(80).collect()))?;
        lines.push(OrderLine {
            sku: product.sku,
            product_name: product.name,
            quantity: item.quantity,
            unit_price: product.price,
        });
    }
    // Microseconds: what both databases keep, so a read-back order looks the same.
    let mut order = Order::confirm(&request.customer, lines, Utc::now().trunc_subsecs(6))?;

    let mut tx = db.begin_write().await?;
    let id = repository::insert_order(&mut *tx, &order).await?;
    for (line_no, line) in (1..).zip(order.lines()) {
        repository::insert_line(&mut *tx, id, line_no, line).await?;
    }
    order.stored_as(id);
    let events = order.drain_events(id)?;
    outbox.emit_records(&mut *tx, events).await?;
    D::commit_write(tx).await?;
    tracing::info!(order_id = id, customer = order.customer(), total = %order.total(), "order confirmed");
    Ok(order)
}

/// The order with this id, if any.
pub async fn find_order<D: ShopDb>(db: &D, id: i64) -> Result<Option<Order>, sqlx::Error> {
    repository::find_order(db, id).await
}
