//! [`ChargeHandler`] and [`RefundHandler`]: the order saga's `charge` step and its
//! compensation, each idempotent on its step key (see [`crate::steps`]).

use bandeja::saga::StepOutcome;
use bandeja::{Command, CommandHandler, HandlerContext, HandlerError};

use super::command::{ChargePayment, Charged, RefundPayment};
use super::repository::{self, NewCharge};
use super::LEDGER;
use crate::steps::{Opened, StepRuns};
use crate::ShopDb;

/// Charges the order's total: one `charges` row, replied with its id. Refused if the
/// saga's refund came first (its tombstone is in the ledger): a charge must not land after
/// its own refund.
#[derive(Debug, Clone, Default)]
pub struct ChargeHandler {
    runs: StepRuns,
}

impl ChargeHandler {
    /// A handler that runs as `runs` says (delay, run log).
    pub fn new(runs: StepRuns) -> Self {
        ChargeHandler { runs }
    }
}

impl<D: ShopDb> CommandHandler<D, ChargePayment> for ChargeHandler {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, D>,
        command: Command<ChargePayment>,
    ) -> Result<(), HandlerError> {
        let charge = &command.payload;
        let opened = LEDGER
            .open(ctx, &command, &self.runs, "billing", charge.order_id)
            .await?;
        let Opened::New { key, now } = opened else {
            return Ok(());
        };
        let outcome = if LEDGER.compensated(ctx.conn(), &key).await? {
            tracing::warn!(
                order_id = charge.order_id,
                "Order {}: the charge arrived after its refund: refused",
                charge.order_id
            );
            StepOutcome::refused("the payment was refunded before it was charged")
        } else {
            let new = NewCharge {
                order_id: charge.order_id,
                saga_id: &key.saga_id,
                customer: &charge.customer,
                amount_cents: charge.amount.cents(),
                at: now,
            };
            let charge_id = repository::charge(ctx.conn(), &new).await?;
            tracing::info!(
                order_id = charge.order_id,
                "Order {}: charged {} EUR to {} (charge {charge_id})",
                charge.order_id,
                charge.amount,
                charge.customer
            );
            StepOutcome::done_with(&Charged { charge_id })?
        };
        LEDGER.finish(ctx, &key, outcome).await
    }
}

/// Refunds the saga's charge: one `refunds` row beside the charge, which stays. Its ledger
/// row is the tombstone a late charge finds; with no charge (it never arrived, or was
/// refused) there is nothing to pay back and only the tombstone is written.
#[derive(Debug, Clone, Default)]
pub struct RefundHandler {
    runs: StepRuns,
}

impl RefundHandler {
    /// A handler that runs as `runs` says (delay, run log).
    pub fn new(runs: StepRuns) -> Self {
        RefundHandler { runs }
    }
}

impl<D: ShopDb> CommandHandler<D, RefundPayment> for RefundHandler {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, D>,
        command: Command<RefundPayment>,
    ) -> Result<(), HandlerError> {
        let refund = &command.payload;
        let opened = LEDGER
            .open(ctx, &command, &self.runs, "billing", refund.order_id)
            .await?;
        let Opened::New { key, now } = opened else {
            return Ok(());
        };
        match repository::charge_of(ctx.conn(), &key.saga_id, refund.charge_id).await? {
            Some(charge) => {
                let id = repository::refund(ctx.conn(), charge, refund.order_id, &key.saga_id, now)
                    .await?;
                tracing::info!(
                    order_id = refund.order_id,
                    "Order {}: refunded charge {} (refund {id})",
                    refund.order_id,
                    charge.0
                );
            }
            None => tracing::info!(
                order_id = refund.order_id,
                "Order {}: no charge to refund (a late one will be refused)",
                refund.order_id
            ),
        }
        LEDGER.finish(ctx, &key, StepOutcome::done()).await
    }
}
