//! The inventory's queries.

use chrono::{DateTime, Utc};

use crate::db::{ShopDb, Sql};

const TAKE: &str = "UPDATE stock SET available = available - $1
    WHERE sku = $2 AND available >= $1 RETURNING available";
const PUT_BACK: &str = "UPDATE stock SET available = available + $1 WHERE sku = $2";
const AVAILABLE: &str = "SELECT available FROM stock WHERE sku = $1";
const MOVEMENT: &str = "INSERT INTO stock_movements (order_id, sku, quantity, taken_at)
    VALUES ($1, $2, $3, $4)";
const SEED: &str =
    "INSERT INTO stock (sku, available) VALUES ($1, $2) ON CONFLICT (sku) DO NOTHING";

/// Takes `quantity` units of `sku` if that many are available; returns the units left,
/// or `None` (nothing changed) on a shortage or an unknown sku.
pub(super) async fn take(
    conn: &mut impl Sql,
    sku: &str,
    quantity: i64,
) -> Result<Option<i64>, sqlx::Error> {
    let row: Option<(i64,)> = conn
        .fetch_optional(TAKE, &[quantity.into(), sku.into()])
        .await?;
    Ok(row.map(|(left,)| left))
}

/// Puts `quantity` units of `sku` back into stock (a released reservation).
pub(super) async fn put_back(
    conn: &mut impl Sql,
    sku: &str,
    quantity: i64,
) -> Result<(), sqlx::Error> {
    conn.execute(PUT_BACK, &[quantity.into(), sku.into()]).await
}

/// Units of `sku` available, read through `conn` (`None`: not tracked).
pub(super) async fn available_in(
    conn: &mut impl Sql,
    sku: &str,
) -> Result<Option<i64>, sqlx::Error> {
    let row: Option<(i64,)> = conn.fetch_optional(AVAILABLE, &[sku.into()]).await?;
    Ok(row.map(|(available,)| available))
}

/// Records that `quantity` units of `sku` left the stock for order `order_id` (a negative
/// quantity: came back).
pub(super) async fn record_movement(
    conn: &mut impl Sql,
    order_id: i64,
    sku: &str,
    quantity: i64,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    conn.execute(
        MOVEMENT,
        &[order_id.into(), sku.into(), quantity.into(), at.into()],
    )
    .await
}

/// Units of `sku` available now (`None`: not tracked).
pub async fn stock_of(db: &impl ShopDb, sku: &str) -> Result<Option<i64>, sqlx::Error> {
    available_in(&mut *db.acquire().await?, sku).await
}

/// Inserts a stock row unless the sku has one.
pub(super) async fn insert_stock_if_missing(
    conn: &mut impl Sql,
    sku: &str,
    available: i64,
) -> Result<(), sqlx::Error> {
    conn.execute(SEED, &[sku.into(), available.into()]).await
}
