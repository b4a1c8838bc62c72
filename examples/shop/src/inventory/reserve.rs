//! [`ReserveHandler`]: the order saga's `reserve` step, all of an order's lines or none.

use std::collections::BTreeMap;

use bandeja::saga::StepOutcome;
use bandeja::{Command, CommandHandler, HandlerContext, HandlerError};
use chrono::{DateTime, Utc};

use super::command::{ReserveStock, StockLine};
use super::{repository, LEDGER};
use crate::db::Sql;
use crate::steps::{Opened, StepRuns};
use crate::ShopDb;

/// Takes every line of the order out of stock, one movement row per line, in the
/// handler's transaction — or none: a shortage (or a product inventory does not track) is
/// refused, naming the sku, the units requested and those available, and the saga
/// refunds the charge. Refused too if the saga's release came first (its tombstone).
#[derive(Debug, Clone, Default)]
pub struct ReserveHandler {
    runs: StepRuns,
}

impl ReserveHandler {
    /// A handler that runs as `runs` says (delay, run log).
    pub fn new(runs: StepRuns) -> Self {
        ReserveHandler { runs }
    }
}

/// Why stock cannot be reserved, if it cannot: the first short product.
async fn shortage(conn: &mut impl Sql, lines: &[StockLine]) -> Result<Option<String>, sqlx::Error> {
    let mut wanted: BTreeMap<&str, i64> = BTreeMap::new();
    for line in lines {
        *wanted.entry(line.sku.as_str()).or_default() += line.quantity;
    }
    for (sku, requested) in wanted {
        match repository::available_in(conn, sku).await? {
            Some(available) if available >= requested => {}
            Some(available) => {
                return Ok(Some(format!(
                    "out of stock: {sku} (requested {requested}, available {available})"
                )))
            }
            None => return Ok(Some(format!("{sku} is not tracked in inventory"))),
        }
    }
    Ok(None)
}

/// Takes every line (checked available by [`shortage`] in this transaction).
async fn take_all(
    conn: &mut impl Sql,
    order_id: i64,
    lines: &[StockLine],
    now: DateTime<Utc>,
) -> Result<(), HandlerError> {
    for line in lines {
        let (sku, quantity) = (line.sku.as_str(), line.quantity);
        let Some(left) = repository::take(conn, sku, quantity).await? else {
            // Another transaction took the units meanwhile (PostgreSQL): roll back, retry.
            return Err(HandlerError::retriable(format!(
                "the stock of {sku} changed while order {order_id} was reserved"
            )));
        };
        repository::record_movement(conn, order_id, sku, quantity, now).await?;
        tracing::info!(
            order_id,
            "Order {order_id}: reserved {quantity} x {sku}, {left} left"
        );
    }
    Ok(())
}

impl<D: ShopDb> CommandHandler<D, ReserveStock> for ReserveHandler {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, D>,
        command: Command<ReserveStock>,
    ) -> Result<(), HandlerError> {
        let order = &command.payload;
        let opened = LEDGER
            .open(ctx, &command, &self.runs, "inventory", order.order_id)
            .await?;
        let Opened::New { key, now } = opened else {
            return Ok(());
        };
        let refusal = if LEDGER.compensated(ctx.conn(), &key).await? {
            Some("the reservation was released before it arrived".to_owned())
        } else {
            shortage(ctx.conn(), &order.lines).await?
        };
        let outcome = match refusal {
            Some(reason) => {
                tracing::warn!(
                    order_id = order.order_id,
                    "Order {}: {reason}: reservation refused",
                    order.order_id
                );
                StepOutcome::refused(reason)
            }
            None => {
                take_all(ctx.conn(), order.order_id, &order.lines, now).await?;
                StepOutcome::done()
            }
        };
        LEDGER.finish(ctx, &key, outcome).await
    }
}
