//! Shipping's queries.

use chrono::{DateTime, Utc};

use crate::db::Sql;

const INSERT: &str = "INSERT INTO shipments (order_id, saga_id, recipient, units, dispatched_at)
    VALUES ($1, $2, $3, $4, $5) RETURNING id";

/// Inserts a shipment of `units` to `recipient` for order `order_id`; its id.
pub(super) async fn insert_shipment(
    conn: &mut impl Sql,
    (order_id, saga_id): (i64, &str),
    recipient: &str,
    units: i64,
    at: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    let params = [
        order_id.into(),
        saga_id.into(),
        recipient.into(),
        units.into(),
        at.into(),
    ];
    let row: Option<(i64,)> = conn.fetch_optional(INSERT, &params).await?;
    row.map(|(id,)| id).ok_or(sqlx::Error::RowNotFound)
}
