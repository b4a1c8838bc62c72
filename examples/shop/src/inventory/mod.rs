//! The inventory module: the units in stock. It reacts to
//! [`OrderConfirmed`](crate::order::OrderConfirmed) by taking the ordered units out of
//! stock ([`InventoryHandler`]) and answers `GET /stock/{sku}`.
//!
//! Owns the `stock` and `stock_movements` tables (one movement per line taken, with the
//! order id: the proof that stock was taken once).

mod handler;
pub mod http;
mod repository;

pub use handler::InventoryHandler;
pub use repository::stock_of;

use crate::db::Sql;

/// The subscriber name of [`InventoryHandler`] (the `subscriber` column of its inbox rows).
pub const SUBSCRIBER: &str = "inventory";

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
