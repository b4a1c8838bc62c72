//! The order module's queries, for both stores.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::model::{Order, OrderLine};
use crate::db::{for_each_store, Backend};
use crate::money::Money;

/// The queries of the order module.
#[async_trait]
pub trait OrderRepository: Backend {
    /// Inserts the order row; returns the generated id.
    async fn insert_order(conn: &mut Self::Conn, order: &Order) -> Result<i64, sqlx::Error>;

    /// Inserts one line of order `order_id`.
    async fn insert_line(
        conn: &mut Self::Conn,
        order_id: i64,
        line_no: i64,
        line: &OrderLine,
    ) -> Result<(), sqlx::Error>;

    /// The order with this id and its lines, if any.
    async fn find_order(&self, id: i64) -> Result<Option<Order>, sqlx::Error>;
}

const INSERT_ORDER: &str = "INSERT INTO orders (customer, status, total_cents, confirmed_at)
    VALUES ($1, $2, $3, $4) RETURNING id";
const INSERT_LINE: &str = "INSERT INTO order_lines
    (order_id, line_no, sku, product_name, quantity, unit_price_cents)
    VALUES ($1, $2, $3, $4, $5, $6)";
const SELECT_ORDER: &str = "SELECT customer, total_cents, confirmed_at FROM orders WHERE id = $1";
const SELECT_LINES: &str = "SELECT sku, product_name, quantity, unit_price_cents
    FROM order_lines WHERE order_id = $1 ORDER BY line_no";

type OrderRow = (String, i64, DateTime<Utc>);
type LineRow = (String, String, i64, i64);

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

macro_rules! implement {
    ($store:ty) => {
        #[async_trait]
        impl OrderRepository for $store {
            async fn insert_order(
                conn: &mut Self::Conn,
                order: &Order,
            ) -> Result<i64, sqlx::Error> {
                sqlx::query_scalar(INSERT_ORDER)
                    .bind(order.customer())
                    .bind(order.status().as_str())
                    .bind(order.total().cents())
                    .bind(order.confirmed_at())
                    .fetch_one(conn)
                    .await
            }

            async fn insert_line(
                conn: &mut Self::Conn,
                order_id: i64,
                line_no: i64,
                line: &OrderLine,
            ) -> Result<(), sqlx::Error> {
                sqlx::query(INSERT_LINE)
                    .bind(order_id)
                    .bind(line_no)
                    .bind(&line.sku)
                    .bind(&line.product_name)
                    .bind(line.quantity)
                    .bind(line.unit_price.cents())
                    .execute(conn)
                    .await
                    .map(drop)
            }

            async fn find_order(&self, id: i64) -> Result<Option<Order>, sqlx::Error> {
                let Some(row) = sqlx::query_as::<_, OrderRow>(SELECT_ORDER)
                    .bind(id)
                    .fetch_optional(self.pool())
                    .await?
                else {
                    return Ok(None);
                };
                let lines = sqlx::query_as::<_, LineRow>(SELECT_LINES)
                    .bind(id)
                    .fetch_all(self.pool())
                    .await?;
                Ok(Some(restore(id, row, lines)))
            }
        }
    };
}

for_each_store!(implement);
