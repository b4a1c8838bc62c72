//! Billing's queries.

use chrono::{DateTime, Utc};

use crate::db::Sql;

const CHARGE: &str = "INSERT INTO charges (order_id, saga_id, customer, amount_cents, charged_at)
    VALUES ($1, $2, $3, $4, $5) RETURNING id";
const CHARGE_BY_ID: &str = "SELECT id, amount_cents FROM charges WHERE id = $1 AND saga_id = $2";
const CHARGE_OF_SAGA: &str = "SELECT id, amount_cents FROM charges WHERE saga_id = $1 ORDER BY id";
const REFUND: &str = "INSERT INTO refunds (charge_id, order_id, saga_id, amount_cents, refunded_at)
    VALUES ($1, $2, $3, $4, $5) RETURNING id";

/// A charge to write.
pub(super) struct NewCharge<'a> {
    pub(super) order_id: i64,
    pub(super) saga_id: &'a str,
    pub(super) customer: &'a str,
    pub(super) amount_cents: i64,
    pub(super) at: DateTime<Utc>,
}

/// Inserts a charge; its id.
pub(super) async fn charge(conn: &mut impl Sql, c: &NewCharge<'_>) -> Result<i64, sqlx::Error> {
    let params = [
        c.order_id.into(),
        c.saga_id.into(),
        c.customer.into(),
        c.amount_cents.into(),
        c.at.into(),
    ];
    let row: Option<(i64,)> = conn.fetch_optional(CHARGE, &params).await?;
    row.map(|(id,)| id).ok_or(sqlx::Error::RowNotFound)
}

/// The charge of saga `saga_id` (by `charge_id` when given): its id and amount.
pub(super) async fn charge_of(
    conn: &mut impl Sql,
    saga_id: &str,
    charge_id: Option<i64>,
) -> Result<Option<(i64, i64)>, sqlx::Error> {
    match charge_id {
        Some(id) => {
            conn.fetch_optional(CHARGE_BY_ID, &[id.into(), saga_id.into()])
                .await
        }
        None => conn.fetch_optional(CHARGE_OF_SAGA, &[saga_id.into()]).await,
    }
}

/// Inserts the refund of `charge_id`; its id.
pub(super) async fn refund(
    conn: &mut impl Sql,
    (charge_id, amount_cents): (i64, i64),
    order_id: i64,
    saga_id: &str,
    at: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    let params = [
        charge_id.into(),
        order_id.into(),
        saga_id.into(),
        amount_cents.into(),
        at.into(),
    ];
    let row: Option<(i64,)> = conn.fetch_optional(REFUND, &params).await?;
    row.map(|(id,)| id).ok_or(sqlx::Error::RowNotFound)
}
