//! The inventory's queries, for both stores.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::db::{for_each_store, Backend};

/// The queries of the inventory module.
#[async_trait]
pub trait InventoryRepository: Backend {
    /// Takes `quantity` units of `sku` if that many are available; returns the units left,
    /// or `None` (nothing changed) on a shortage or an unknown sku. A write first, so a
    /// SQLite handler transaction takes the write lock here instead of failing to upgrade.
    async fn take(
        conn: &mut Self::Conn,
        sku: &str,
        quantity: i64,
    ) -> Result<Option<i64>, sqlx::Error>;

    /// Units of `sku` available, read through `conn` (`None`: not tracked).
    async fn available_in(conn: &mut Self::Conn, sku: &str) -> Result<Option<i64>, sqlx::Error>;

    /// Records that `quantity` units of `sku` left the stock for order `order_id`.
    async fn record_movement(
        conn: &mut Self::Conn,
        order_id: i64,
        sku: &str,
        quantity: i64,
        at: DateTime<Utc>,
    ) -> Result<(), sqlx::Error>;

    /// Units of `sku` available now (`None`: not tracked).
    async fn stock_of(&self, sku: &str) -> Result<Option<i64>, sqlx::Error>;

    /// Inserts a stock row unless the sku has one.
    async fn insert_stock_if_missing(
        conn: &mut Self::Conn,
        sku: &str,
        available: i64,
    ) -> Result<(), sqlx::Error>;
}

const TAKE: &str = "UPDATE stock SET available = available - $1
    WHERE sku = $2 AND available >= $1 RETURNING available";
const AVAILABLE: &str = "SELECT available FROM stock WHERE sku = $1";
const MOVEMENT: &str = "INSERT INTO stock_movements (order_id, sku, quantity, taken_at)
    VALUES ($1, $2, $3, $4)";
const SEED: &str =
    "INSERT INTO stock (sku, available) VALUES ($1, $2) ON CONFLICT (sku) DO NOTHING";

macro_rules! implement {
    ($store:ty) => {
        #[async_trait]
        impl InventoryRepository for $store {
            async fn take(
                conn: &mut Self::Conn,
                sku: &str,
                quantity: i64,
            ) -> Result<Option<i64>, sqlx::Error> {
                sqlx::query_scalar(TAKE)
                    .bind(quantity)
                    .bind(sku)
                    .fetch_optional(conn)
                    .await
            }

            async fn available_in(
                conn: &mut Self::Conn,
                sku: &str,
            ) -> Result<Option<i64>, sqlx::Error> {
                sqlx::query_scalar(AVAILABLE)
                    .bind(sku)
                    .fetch_optional(conn)
                    .await
            }

            async fn record_movement(
                conn: &mut Self::Conn,
                order_id: i64,
                sku: &str,
                quantity: i64,
                at: DateTime<Utc>,
            ) -> Result<(), sqlx::Error> {
                sqlx::query(MOVEMENT)
                    .bind(order_id)
                    .bind(sku)
                    .bind(quantity)
                    .bind(at)
                    .execute(conn)
                    .await
                    .map(drop)
            }

            async fn stock_of(&self, sku: &str) -> Result<Option<i64>, sqlx::Error> {
                sqlx::query_scalar(AVAILABLE)
                    .bind(sku)
                    .fetch_optional(self.pool())
                    .await
            }

            async fn insert_stock_if_missing(
                conn: &mut Self::Conn,
                sku: &str,
                available: i64,
            ) -> Result<(), sqlx::Error> {
                sqlx::query(SEED)
                    .bind(sku)
                    .bind(available)
                    .execute(conn)
                    .await
                    .map(drop)
            }
        }
    };
}

for_each_store!(implement);
