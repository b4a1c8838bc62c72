//! The bandeja shop: a modular monolith in the shape of the Spring Modulith shop, with
//! six modules that own their tables and talk through an event and an orchestrated saga.
//!
//! - [`catalog`]: products with their names and prices (the order module calls it: no
//!   price, no order);
//! - [`order`]: places orders; confirming one stores the order, its
//!   [`OrderConfirmed`](order::OrderConfirmed) event and the start of its
//!   [saga](order::saga) in **one transaction** (the outbox), and orchestrates the saga;
//! - [`billing`]: charges the order (the saga's first step) and refunds it (its
//!   compensation);
//! - [`inventory`]: reserves the ordered units, all or none (a shortage is refused: the
//!   saga refunds the charge), and releases them;
//! - [`shipping`]: dispatches the parcel (the saga's pivot);
//! - [`notification`]: records the confirmation email on `OrderConfirmed`.
//!
//! bandeja relays the event from the outbox to one inbox row per subscriber, and the saga's
//! commands and replies through the commands' boxes; each handler runs inside the
//! transaction that marks its row COMPLETED (and, for a step, sends its reply). A crash
//! anywhere resumes, never loses, never applies twice; the step handlers are idempotent on
//! the step's key ([`steps`]) for the sends the inbox cannot absorb.
//!
//! Everything runs on SQLite or PostgreSQL: each query is written once, with SQL both
//! accept, over [`db::Sql`] (a connection) and [`db::ShopDb`] (bandeja's store).

pub mod app;
pub mod billing;
pub mod catalog;
pub mod config;
pub mod db;
pub mod error;
pub mod inventory;
pub mod messaging;
pub mod money;
pub mod notification;
pub mod order;
pub mod schemas;
pub mod server;
pub mod shipping;
pub mod steps;

pub use db::ShopDb;
