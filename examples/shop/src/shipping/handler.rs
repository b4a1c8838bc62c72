//! [`DispatchHandler`]: the order saga's pivot, idempotent on its step key.

use bandeja::saga::StepOutcome;
use bandeja::{Command, CommandHandler, HandlerContext, HandlerError};

use super::command::{DispatchShipment, Dispatched};
use super::{repository, LEDGER};
use crate::steps::{Opened, StepRuns};
use crate::ShopDb;

/// Records the shipment (one `shipments` row) and replies with its id. A second send of
/// the step (the pivot is sent again when its reply is late) replies again with that id
/// and ships nothing more.
#[derive(Debug, Clone, Default)]
pub struct DispatchHandler {
    runs: StepRuns,
}

impl DispatchHandler {
    /// A handler that runs as `runs` says (delay, run log).
    pub fn new(runs: StepRuns) -> Self {
        DispatchHandler { runs }
    }
}

impl<D: ShopDb> CommandHandler<D, DispatchShipment> for DispatchHandler {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, D>,
        command: Command<DispatchShipment>,
    ) -> Result<(), HandlerError> {
        let parcel = &command.payload;
        let opened = LEDGER
            .open(ctx, &command, &self.runs, "shipping", parcel.order_id)
            .await?;
        let Opened::New { key, now } = opened else {
            return Ok(());
        };
        let recipient = format!("{}@example.com", parcel.customer);
        let order = (parcel.order_id, key.saga_id.as_str());
        let shipment_id =
            repository::insert_shipment(ctx.conn(), order, &recipient, parcel.units, now).await?;
        tracing::info!(
            order_id = parcel.order_id,
            "Order {}: dispatched {} units to {recipient} (shipment {shipment_id})",
            parcel.order_id,
            parcel.units
        );
        let outcome = StepOutcome::done_with(&Dispatched { shipment_id })?;
        LEDGER.finish(ctx, &key, outcome).await
    }
}
