//! The catalog module: the products the shop sells, with their names and prices.
//!
//! The order module *calls* it (it needs the price before it can store an order); nothing
//! here reacts to events. Owns the `products` table, seeded idempotently at startup.

pub mod http;
mod repository;

use serde::Serialize;

pub use repository::{find_product, products};

use crate::db::Sql;
use crate::money::Money;

/// A product of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Product {
    /// Stock keeping unit, the product's key (`KB-001`).
    pub sku: String,
    /// Display name.
    pub name: String,
    /// Price of one unit.
    pub price: Money,
}

/// The tables of this module (DDL templates, see [`crate::db::Dialect::ddl`]).
pub const SCHEMA: &[&str] = &["CREATE TABLE IF NOT EXISTS products (
        sku         TEXT   PRIMARY KEY,
        name        TEXT   NOT NULL,
        price_cents BIGINT NOT NULL CHECK (price_cents >= 0)
    )"];

/// The seeded catalog: sku, name, price in cents.
pub const SEED: [(&str, &str, i64); 3] = [
    ("KB-001", "Mechanical keyboard", 8990),
    ("MS-001", "Wireless mouse", 2990),
    ("HD-001", "USB headset", 4990),
];

/// Inserts the seeded products that are missing (existing rows are left alone).
pub(crate) async fn seed(conn: &mut impl Sql) -> Result<(), sqlx::Error> {
    for (sku, name, cents) in SEED {
        let product = Product {
            sku: sku.to_owned(),
            name: name.to_owned(),
            price: Money::from_cents(cents),
        };
        repository::insert_product_if_missing(conn, &product).await?;
    }
    Ok(())
}
