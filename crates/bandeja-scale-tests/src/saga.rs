//! The saga of the crash tests: an order's `charge` (compensated by a refund) →
//! `reserve` (compensated by a release; refused "out of stock" for every order number
//! divisible by the refusal period) → `ship` (the pivot) → `notify`, run by `saga-node`
//! processes: one role orchestrates, the other does the steps, each step's effect written
//! in the step handler's transaction (`saga_effects`) and each run recorded outside it
//! (`saga_runs`), so a step applied twice and a step run twice are told apart.

use std::time::Duration;

use bandeja::sagas::Saga;
use bandeja::{Command, Payload};
use serde::{Deserialize, Serialize};

/// A step's command.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepCommand {
    /// The step.
    pub step: String,
    /// The order.
    pub order: u64,
}

impl Payload for StepCommand {
    const TYPE: &'static str = "scale.saga.Step";
}

/// A compensation's command.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UndoCommand {
    /// The step it undoes.
    pub step: String,
    /// The order.
    pub order: u64,
}

impl Payload for UndoCommand {
    const TYPE: &'static str = "scale.saga.Undo";
}

/// The saga's data.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OrderSaga {
    /// The order.
    pub order: u64,
}

/// The service that does the steps.
pub const STEPS_SERVICE: &str = "saga-steps";

fn step(name: &'static str) -> impl Fn(&OrderSaga) -> bandeja::Result<Command<StepCommand>> {
    move |data: &OrderSaga| {
        Command::to_self(
            STEPS_SERVICE,
            StepCommand {
                step: name.to_owned(),
                order: data.order,
            },
        )
    }
}

fn undo(name: &'static str) -> impl Fn(&OrderSaga) -> bandeja::Result<Command<UndoCommand>> {
    move |data: &OrderSaga| {
        Command::to_self(
            STEPS_SERVICE,
            UndoCommand {
                step: name.to_owned(),
                order: data.order,
            },
        )
    }
}

/// charge → reserve → ship (pivot) → notify, each step given 60 s to reply (kills and
/// restarts within a test take far less: no step times out).
#[must_use]
pub fn order_saga() -> Saga<OrderSaga> {
    let limit = Duration::from_secs(60);
    Saga::<OrderSaga>::define("scale-order")
        .step("charge", step("charge"))
        .compensate_with(undo("charge"))
        .timeout(limit)
        .step("reserve", step("reserve"))
        .compensate_with(undo("reserve"))
        .timeout(limit)
        .step("ship", step("ship"))
        .pivot()
        .timeout(limit)
        .step("notify", step("notify"))
        .timeout(limit)
        .build()
        .unwrap_or_else(|e| panic!("the scale saga is valid: {e}"))
}

/// The test tables of the saga crash tests in `schema`.
#[must_use]
pub fn saga_tables_ddl(schema: &str) -> [String; 2] {
    [
        format!(
            "CREATE TABLE IF NOT EXISTS \"{schema}\".saga_effects \
             (saga_id TEXT NOT NULL, step TEXT NOT NULL, phase TEXT NOT NULL, \
              applied_by TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS \"{schema}\".saga_runs \
             (saga_id TEXT NOT NULL, step TEXT NOT NULL, phase TEXT NOT NULL, \
              run_by TEXT NOT NULL, run_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        ),
    ]
}
