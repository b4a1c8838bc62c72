//! The shipping module: dispatches an order's parcel ([`DispatchShipment`], the order
//! saga's `ship` step and its **pivot**: once the parcel has left, nothing undoes it, so
//! it has no compensation).
//!
//! Owns the `shipments` and `shipping_steps` tables (the last: the step ledger, see
//! [`crate::steps::Ledger`]).

mod command;
mod handler;
mod repository;

pub use command::{DispatchShipment, Dispatched};
pub use handler::DispatchHandler;

use crate::steps::Ledger;

/// The subscriber name of [`DispatchHandler`].
pub const SUBSCRIBER: &str = "shipping-dispatch";

/// The step ledger of shipping.
pub(crate) const LEDGER: Ledger = Ledger::new("shipping_steps");

/// The tables of this module (DDL templates, see [`crate::db::Dialect::ddl`]).
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS shipments (
        id            {id},
        order_id      BIGINT NOT NULL,
        saga_id       TEXT   NOT NULL,
        recipient     TEXT   NOT NULL,
        units         BIGINT NOT NULL,
        dispatched_at {timestamp} NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS shipments_order ON shipments (order_id)",
    crate::step_ledger_ddl!("shipping_steps"),
];
