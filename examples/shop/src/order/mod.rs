//! The order module: places orders, announces them with [`OrderConfirmed`] and
//! orchestrates their [saga] (charge → reserve → ship).
//!
//! Placing an order is one application transaction: the order and its lines are inserted,
//! the aggregate's recorded event is drained into bandeja's outbox, and the order's saga
//! is started (its row and its first command), all through the same transaction: they
//! commit together or not at all. The module does not know who listens to the event; the
//! saga's steps are the billing, inventory and shipping modules' commands. Owns the
//! `orders`, `order_lines` and `order_sagas` tables.

mod command;
mod event;
pub mod http;
mod model;
mod progress;
mod repository;
pub mod saga;
mod service;

pub use command::{Item, OrderError, PlaceOrder, MAX_CUSTOMER_LEN, MAX_LINES, MAX_QUANTITY};
pub use event::{v1_to_v2, ConfirmedLine, OrderConfirmed, OrderConfirmedV1, VERSION_1_CURRENCY};
pub use model::{Order, OrderLine, OrderStatus};
pub use progress::Progress;
pub use saga::{order_saga, OrderSaga};
pub use service::{find_order, place_order, FindOrderError, PlaceOrderError, Placed};

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
    "CREATE TABLE IF NOT EXISTS order_sagas (
        order_id BIGINT PRIMARY KEY REFERENCES orders (id),
        saga_id  TEXT   NOT NULL
    )",
];
