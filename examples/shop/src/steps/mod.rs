//! What the shop's saga steps share: the billing, inventory and shipping handlers each do
//! one step (or compensation) of the order saga ([`crate::order::saga`]) and must be
//! idempotent on the step's key, as the sagas chapter asks.
//!
//! - [`StepKey`]: the step's `bandeja-saga-key` header (`<saga id>:<step>:<phase>`), read
//!   from the command;
//! - [`Ledger`]: a module's table of step outcomes, one row per key: a command whose key
//!   is there already does nothing again and replies again with its first outcome, and a
//!   compensation's row is the tombstone that makes a late step refuse;
//! - [`StepRuns`]: the step delay (`SHOP_STEP_DELAY`, the window of the crash tests) and
//!   the run log (`SHOP_RUN_LOG`), written **outside** the handler's transaction, so a
//!   test sees a step that ran again after a kill.

mod key;
mod ledger;
mod runs;

pub use key::{NotAStep, StepKey};
pub use ledger::{Ledger, Opened};
pub use runs::StepRuns;

/// The DDL template of a module's step ledger named `$table` (see [`Ledger`]).
#[macro_export]
macro_rules! step_ledger_ddl {
    ($table:literal) => {
        concat!(
            "CREATE TABLE IF NOT EXISTS ",
            $table,
            " (
        saga_key    TEXT   PRIMARY KEY,
        sends       BIGINT NOT NULL,
        ok          BIGINT NOT NULL,
        reason      TEXT   NOT NULL,
        data        TEXT   NOT NULL,
        recorded_at {timestamp} NOT NULL
    )"
        )
    };
}
