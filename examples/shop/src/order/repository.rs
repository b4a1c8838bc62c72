//! The order module's queries.

use chrono::{DateTime, Utc};

use super::model::{Order, OrderLine};
use crate::db::{ShopDb, Sql};
use crate::money::Money;

const INSERT_ORDER: &str = "INSERT INTO orders (customer, status, total_cents, confirmed_at)
    VALUES ($1, $2, $3, $4) RETURNING id";
const INSERT_LINE: &str = "INSERT INTO order_lines
    (order_id, line_no, sku, product_name, quantity, unit_price_cents)
    VALUES ($1, $2, $3, $4, $5, $6)";
const SELECT_ORDER: &str = "SELECT customer, total_cents, confirmed_at FROM orders WHERE id = $1";
const SELECT_LINES: &str = "SELECT sku, product_name, quantity, unit_price_cents
    FROM order_lines WHERE order_id = $1 ORDER BY line_no";

const INSERT_SAGA: &str = "INSERT INTO order_sagas (order_id, saga_id) VALUES ($1, $2)";
const SELECT_SAGA: &str = "SELECT saga_id FROM order_sagas WHERE order_id = $1";

type OrderRow = (String, i64, DateTime<Utc>);
type LineRow = (String, String, i64, i64);

/// Inserts the order row; returns the generated id.
pub(super) async fn insert_order(conn: &mut impl Sql, order: &Order) -> Result<i64, sqlx::Error> {
    let params = [
        order.customer().into(),
        order.status().as_str().into(),
        order.total().cents().into(),
        order.confirmed_at().into(),
    ];
    let row: Option<(i64,)> = conn.fetch_optional(INSERT_ORDER, &params).await?;
    row.map(|(id,)| id).ok_or(sqlx::Error::RowNotFound)
}

/// Inserts line `line_no` of order `order_id`.
pub(super) async fn insert_line(
    conn: &mut impl Sql,
    order_id: i64,
    line_no: i64,
    line: &OrderLine,
) -> Result<(), sqlx::Error> {
    let params = [
        order_id.into(),
        line_no.into(),
        (&line.sku).into(),
        (&line.product_name).into(),
        line.quantity.into(),
        line.unit_price.cents().into(),
    ];
    conn.execute(INSERT_LINE, &params).await
}

/// Links order `order_id` to its saga.
pub(super) async fn insert_saga(
    conn: &mut impl Sql,
    order_id: i64,
    saga_id: &str,
) -> Result<(), sqlx::Error> {
    conn.execute(INSERT_SAGA, &[order_id.into(), saga_id.into()])
        .await
}

/// The order with this id and its lines, if any, with its saga's id (`None`: stored
/// before the shop had sagas).
pub(super) async fn find_order(
    db: &impl ShopDb,
    id: i64,
) -> Result<Option<(Order, Option<String>)>, sqlx::Error> {
    let mut conn = db.acquire().await?;
    let Some(row) = conn.fetch_optional(SELECT_ORDER, &[id.into()]).await? else {
        return Ok(None);
    };
    let lines = conn.fetch_all(SELECT_LINES, &[id.into()]).await?;
    let saga: Option<(String,)> = conn.fetch_optional(SELECT_SAGA, &[id.into()]).await?;
    Ok(Some((restore(id, row, lines), saga.map(|(s,)| s))))
}

fn restore(id: i64, (customer, total, at): OrderRow, lines: Vec<LineRow>) -> Order {
    let lines = lines
        .into_iter()
        .map(|(sku, product_name, quantity, price)| OrderLine {
            sku,
            product_name,
            quantity,
            unit_price: Money::from_cents(price),
        })
        .collect();
    Order::restore(id, customer, lines, Money::from_cents(total), at)
}
