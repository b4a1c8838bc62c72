//! The order module: places orders and announces them with [`OrderConfirmed`].
//!
//! Placing an order is one application transaction: the order and its lines are inserted
//! and the aggregate's recorded event is drained into bandeja's outbox through the same
//! transaction, so the order and its announcement commit together or not at all. The
//! module does not know who listens. Owns the `orders` and `order_lines` tables.

mod command;
mod event;
pub mod http;
mod model;
mod repository;
mod service;

pub use command::{Item, OrderError, PlaceOrder, MAX_CUSTOMER_LEN, MAX_LINES, MAX_QUANTITY};
pub use event::{ConfirmedLine, OrderConfirmed};
pub use model::{Order, OrderLine, OrderStatus};
pub use service::{find_order, place_order, PlaceOrderError};

/// The aggregate type written on the events of this module.
pub const AGGREGATE_TYPE: &str = "Order";

/// The tables of this module (DDL templates, see [`crate::db::Dialect::ddl`]).
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS orders (
        id           {id},
        customer     TEXT   NOT NULL,
        status       TEXT   NOT NULL,
        total_cents  BIGINT NOT NULL,
        confirmed_at {timestamp} NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS order_lines (
        order_id         BIGINT NOT NULL REFERENCES orders (id),
        line_no          BIGINT NOT NULL,
        sku              TEXT   NOT NULL,
        product_name     TEXT   NOT NULL,
        quantity         BIGINT NOT NULL CHECK (quantity > 0),
        unit_price_cents BIGINT NOT NULL,
        PRIMARY KEY (order_id, line_no)
    )",
];
