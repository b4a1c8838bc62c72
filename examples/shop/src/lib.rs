//! The bandeja shop: a modular monolith in the shape of the Spring Modulith shop, with
//! four modules that own their tables and talk through events.
//!
//! - [`catalog`]: products with their names and prices (the order module calls it: no
//!   price, no order);
//! - [`order`]: places orders; confirming one stores the order and its
//!   [`OrderConfirmed`](order::OrderConfirmed) event in **one transaction** (the outbox);
//! - [`inventory`]: takes the ordered units out of stock when an order is confirmed;
//! - [`notification`]: records the confirmation email.
//!
//! The order module does not know who listens: bandeja relays the event from the outbox
//! to one inbox row per subscriber (`inventory`, `notification`), and each handler runs
//! inside the transaction that marks its row COMPLETED. A crash anywhere resumes, never
//! loses, never applies twice.
//!
//! Everything runs on SQLite or PostgreSQL: each query is written once, with SQL both
//! accept, over [`db::Sql`] (a connection) and [`db::ShopDb`] (bandeja's store).

pub mod app;
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

pub use db::ShopDb;
