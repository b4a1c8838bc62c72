//! The inventory module: the units in stock. It does the order saga's `reserve` step
//! ([`ReserveHandler`]: all of an order's lines or none; a shortage is refused) and its
//! compensation ([`ReleaseHandler`]: the units go back), and answers `GET /stock/{sku}`.
//!
//! Owns the `stock`, `stock_movements` and `inventory_steps` tables: one movement per
//! line reserved, with the order id (the proof that stock was taken once), and one per
//! line released (a negative quantity: units back; the reservation's rows stay); the last
//! table is the step ledger ([`crate::steps::Ledger`]).

mod command;
pub mod http;
mod release;
mod repository;
mod reserve;

pub use command::{ReleaseStock, ReserveStock, StockLine};
pub use release::ReleaseHandler;
pub use repository::stock_of;
pub use reserve::ReserveHandler;

use crate::db::Sql;
use crate::steps::Ledger;

/// The subscriber name of [`ReserveHandler`].
pub const RESERVE_SUBSCRIBER: &str = "inventory-reserve";
/// The subscriber name of [`ReleaseHandler`].
pub const RELEASE_SUBSCRIBER: &str = "inventory-release";

/// The step ledger of inventory.
pub(crate) const LEDGER: Ledger = Ledger::new("inventory_steps");

/// The tables of this module (DDL templates, see [`crate::db::Dialect::ddl`]).
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS stock (
        sku       TEXT   PRIMARY KEY,
        available BIGINT NOT NULL CHECK (available >= 0)
    )",
    "CREATE TABLE IF NOT EXISTS stock_movements (
        id       {id},
        order_id BIGINT NOT NULL,
        sku      TEXT   NOT NULL,
        quantity BIGINT NOT NULL,
        taken_at {timestamp} NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS stock_movements_order ON stock_movements (order_id)",
    crate::step_ledger_ddl!("inventory_steps"),
];

/// The initial stock: sku, units. MS-001 has a million so load tests never run out;
/// HD-001 has none, to show a shortage.
pub const SEED: [(&str, i64); 3] = [("KB-001", 10), ("MS-001", 1_000_000), ("HD-001", 0)];

/// Inserts the initial stock of the skus that have no row yet (existing stock is kept).
pub(crate) async fn seed(conn: &mut impl Sql) -> Result<(), sqlx::Error> {
    for (sku, available) in SEED {
        repository::insert_stock_if_missing(conn, sku, available).await?;
    }
    Ok(())
}
