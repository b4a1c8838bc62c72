//! The order use cases: place an order (one transaction: order, lines, event, saga) and
//! read one with its progress.

use chrono::{SubsecRound, Utc};

use bandeja::saga::SagaId;
use bandeja::sagas::Saga;
use bandeja::Bandeja;

use super::command::{OrderError, PlaceOrder};
use super::model::{Order, OrderLine};
use super::progress::Progress;
use super::repository;
use super::saga::{OrderSaga, FIRST_STEP};
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
    /// The outbox refused the event, or the saga could not start: the transaction was
    /// rolled back.
    #[error("outbox error: {0}")]
    Outbox(#[from] bandeja::Error),
}

/// Why reading an order failed.
#[derive(Debug, thiserror::Error)]
pub enum FindOrderError {
    /// The shop's tables.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The saga's state.
    #[error("reading the order's saga: {0}")]
    Saga(#[from] bandeja::StoreError),
    /// The stored saga id is not one.
    #[error("order {order_id} names saga `{saga_id}`, which is not a saga id")]
    BadSagaId {
        /// The order.
        order_id: i64,
        /// What `order_sagas` holds.
        saga_id: String,
    },
}

/// A placed order and its saga.
#[derive(Debug, Clone)]
pub struct Placed {
    /// The order, stored.
    pub order: Order,
    /// Its saga (also the correlation id of the saga's messages).
    pub saga_id: SagaId,
    /// Where it stands: at the saga's first step.
    pub progress: Progress,
}

/// Places an order: checks the request, prices it from the catalog (a direct call: no
/// price, no order), then in **one transaction** inserts the order and its lines, drains
/// the aggregate's [`OrderConfirmed`](super::OrderConfirmed) into the outbox and starts the
/// order's saga ([`Bandeja::start_saga`]: its row and its first command). After the commit
/// bandeja delivers the event to every subscriber and moves the saga, whatever crashes
/// afterwards.
pub async fn place_order<D: ShopDb>(
    db: &D,
    bandeja: &Bandeja<D>,
    saga: &Saga<OrderSaga>,
    request: PlaceOrder,
) -> Result<Placed, PlaceOrderError> {
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
    bandeja.outbox().emit_records(&mut *tx, events).await?;
    let saga_id = bandeja
        .start_saga(&mut *tx, saga, &order.saga_data(id))
        .await?;
    repository::insert_saga(&mut *tx, id, &saga_id.to_string()).await?;
    D::commit_write(tx).await?;
    tracing::info!(order_id = id, customer = order.customer(), total = %order.total(), saga_id = %saga_id, "order confirmed, its saga started");
    Ok(Placed {
        order,
        saga_id,
        progress: Progress::started(saga_id, FIRST_STEP),
    })
}

/// The order with this id, if any, and where it stands (its saga's state).
pub async fn find_order<D: ShopDb>(
    db: &D,
    id: i64,
) -> Result<Option<(Order, Progress)>, FindOrderError> {
    let Some((order, saga)) = repository::find_order(db, id).await? else {
        return Ok(None);
    };
    let Some(saga) = saga else {
        return Ok(Some((order, Progress::confirmed())));
    };
    let saga_id: SagaId = saga.parse().map_err(|_| FindOrderError::BadSagaId {
        order_id: id,
        saga_id: saga.clone(),
    })?;
    let progress = match db.saga(saga_id).await? {
        Some(state) => Progress::of(&state),
        // The saga's row is written with the order: gone only if someone deleted it.
        None => Progress::confirmed(),
    };
    Ok(Some((order, progress)))
}
