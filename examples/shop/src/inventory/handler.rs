//! [`InventoryHandler`]: takes the units of a confirmed order out of stock.

use chrono::{SubsecRound, Utc};

use bandeja::{Event, EventHandler, HandlerContext, HandlerError};

use super::repository;
use crate::order::OrderConfirmed;
use crate::ShopDb;

/// Reacts to [`OrderConfirmed`]: per line, takes the units from stock and records a
/// movement, all in the handler's transaction (the one that marks the inbox row
/// COMPLETED, so a line is never taken twice).
///
/// A shortage is a business fact, not a failure: it is logged and the line is skipped.
/// Failing would only retry, and retrying does not create stock.
#[derive(Debug, Clone, Copy, Default)]
pub struct InventoryHandler;

impl<D: ShopDb> EventHandler<D, OrderConfirmed> for InventoryHandler {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, D>,
        event: Event<OrderConfirmed>,
    ) -> Result<(), HandlerError> {
        let order = &event.payload;
        let now = Utc::now().trunc_subsecs(6);
        for line in &order.lines {
            let (sku, quantity) = (line.sku.as_str(), line.quantity);
            match repository::take(ctx.conn(), sku, quantity).await? {
                Some(left) => {
                    repository::record_movement(ctx.conn(), order.order_id, sku, quantity, now)
                        .await?;
                    tracing::info!(
                        order_id = order.order_id,
                        "Order {}: took {quantity} x {sku} from stock, {left} left",
                        order.order_id
                    );
                }
                None => match repository::available_in(ctx.conn(), sku).await? {
                    Some(available) => tracing::warn!(
                        order_id = order.order_id,
                        "Order {}: stock shortage for {sku} (requested {quantity}, available {available})",
                        order.order_id
                    ),
                    None => tracing::warn!(
                        order_id = order.order_id,
                        "Order {}: product {sku} is not tracked in inventory",
                        order.order_id
                    ),
                },
            }
        }
        Ok(())
    }
}
