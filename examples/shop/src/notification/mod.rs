//! The notification module: the second listener of
//! [`OrderConfirmed`](crate::order::OrderConfirmed). Adding it did not change a line of the
//! order module.
//!
//! It "sends" the confirmation email by recording it in its `sent_emails` table (one row
//! per email) and logging it: a database write, so it commits with the inbox row and is
//! never done twice.

mod email;
mod handler;
mod repository;

pub use email::Email;
pub use handler::NotificationHandler;

/// The subscriber name of [`NotificationHandler`].
pub const SUBSCRIBER: &str = "notification";

/// The tables of this module (DDL templates, see [`crate::db::Dialect::ddl`]).
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS sent_emails (
        id        {id},
        order_id  BIGINT NOT NULL,
        recipient TEXT   NOT NULL,
        subject   TEXT   NOT NULL,
        body      TEXT   NOT NULL,
        sent_at   {timestamp} NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS sent_emails_order ON sent_emails (order_id)",
];
