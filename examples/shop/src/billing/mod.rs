//! The billing module: charges an order's total ([`ChargePayment`], the first step of the
//! order saga) and refunds it ([`RefundPayment`], the step's compensation). A refund is a
//! row of its own: the charge row stays, so both facts are recorded.
//!
//! Owns the `charges`, `refunds` and `billing_steps` tables (the last: the step ledger,
//! see [`crate::steps::Ledger`]).

mod command;
mod handler;
mod repository;

pub use command::{ChargePayment, Charged, RefundPayment};
pub use handler::{ChargeHandler, RefundHandler};

use crate::steps::Ledger;

/// The subscriber name of [`ChargeHandler`].
pub const CHARGE_SUBSCRIBER: &str = "billing-charge";
/// The subscriber name of [`RefundHandler`].
pub const REFUND_SUBSCRIBER: &str = "billing-refund";

/// The step ledger of billing.
pub(crate) const LEDGER: Ledger = Ledger::new("billing_steps");

/// The tables of this module (DDL templates, see [`crate::db::Dialect::ddl`]).
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS charges (
        id           {id},
        order_id     BIGINT NOT NULL,
        saga_id      TEXT   NOT NULL,
        customer     TEXT   NOT NULL,
        amount_cents BIGINT NOT NULL,
        charged_at   {timestamp} NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS charges_saga ON charges (saga_id)",
    "CREATE TABLE IF NOT EXISTS refunds (
        id           {id},
        charge_id    BIGINT NOT NULL REFERENCES charges (id),
        order_id     BIGINT NOT NULL,
        saga_id      TEXT   NOT NULL,
        amount_cents BIGINT NOT NULL,
        refunded_at  {timestamp} NOT NULL
    )",
    crate::step_ledger_ddl!("billing_steps"),
];
