//! [`ReleaseHandler`]: the compensation of the `reserve` step.

use bandeja::saga::StepOutcome;
use bandeja::{Command, CommandHandler, HandlerContext, HandlerError};

use super::command::ReleaseStock;
use super::{repository, LEDGER};
use crate::steps::{Opened, StepRuns};
use crate::ShopDb;

/// Puts back what the saga's reservation took: one movement row per line with the units
/// returned (a negative quantity), beside the reservation's rows, which stay. If the
/// reservation was not done (refused, or not arrived yet) nothing goes back; the ledger row
/// is the tombstone that makes a late reservation refuse.
#[derive(Debug, Clone, Default)]
pub struct ReleaseHandler {
    runs: StepRuns,
}

impl ReleaseHandler {
    /// A handler that runs as `runs` says (delay, run log).
    pub fn new(runs: StepRuns) -> Self {
        ReleaseHandler { runs }
    }
}

impl<D: ShopDb> CommandHandler<D, ReleaseStock> for ReleaseHandler {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, D>,
        command: Command<ReleaseStock>,
    ) -> Result<(), HandlerError> {
        let order = &command.payload;
        let opened = LEDGER
            .open(ctx, &command, &self.runs, "inventory", order.order_id)
            .await?;
        let Opened::New { key, now } = opened else {
            return Ok(());
        };
        if LEDGER.step_done(ctx.conn(), &key).await? {
            for line in &order.lines {
                let (sku, quantity) = (line.sku.as_str(), line.quantity);
                repository::put_back(ctx.conn(), sku, quantity).await?;
                repository::record_movement(ctx.conn(), order.order_id, sku, -quantity, now)
                    .await?;
                tracing::info!(
                    order_id = order.order_id,
                    "Order {}: released {quantity} x {sku}",
                    order.order_id
                );
            }
        }
        LEDGER.finish(ctx, &key, StepOutcome::done()).await
    }
}
