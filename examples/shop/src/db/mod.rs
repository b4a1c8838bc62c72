//! The shop's database: the same SQL on SQLite and PostgreSQL, and the shop's migrations.
//!
//! Each module's queries are written once, as plain functions with `$1` placeholders
//! (sqlx accepts them on SQLite too) and the three kinds of value the shop's tables hold
//! ([`Value`]). What differs between the two databases is two small traits, implemented
//! once per database (`db/sqlite.rs`, `db/postgres.rs`):
//!
//! - [`Sql`], on a connection (`SqliteConnection`, `PgConnection`): runs one statement.
//!   The queries take `&mut impl Sql`, so they run alike inside a handler's transaction
//!   (`ctx.conn()`), the caller's transaction, or on a connection from the pool;
//! - [`ShopDb`], on bandeja's store (`SqliteStore`, `PgStore`): lends a connection from the
//!   pool, begins a write transaction, names the DDL [`Dialect`].

use std::future::Future;
use std::ops::DerefMut;

use bandeja::{SagaStore, Store};
use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::FromRow;

#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;

/// A value bound to a `$n` placeholder: the kinds of column the shop's tables have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// A `BIGINT`.
    Int(i64),
    /// A `TEXT`.
    Text(&'a str),
    /// A timestamp (`TIMESTAMPTZ` on PostgreSQL, `TEXT` on SQLite).
    Time(DateTime<Utc>),
}

impl From<i64> for Value<'_> {
    fn from(value: i64) -> Self {
        Value::Int(value)
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(value: &'a str) -> Self {
        Value::Text(value)
    }
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(value: &'a String) -> Self {
        Value::Text(value)
    }
}

impl From<DateTime<Utc>> for Value<'_> {
    fn from(value: DateTime<Utc>) -> Self {
        Value::Time(value)
    }
}

/// A row the shop reads: a tuple of column values (`(String, i64)`, or `(i64,)` for one
/// column) that both databases' rows decode into. (sqlx is built with both drivers, so
/// this names PostgreSQL's rows even without the `postgres` feature.)
pub trait Row: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin {}

impl<T> Row for T where T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{}

/// A connection the shop's SQL runs on (SQLite's or PostgreSQL's).
pub trait Sql: Send + Sized {
    /// Runs a statement that returns no rows.
    fn execute(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// Runs a query; its first row, if any.
    fn fetch_optional<R: Row>(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
    ) -> impl Future<Output = Result<Option<R>, sqlx::Error>> + Send;

    /// Runs a query; all its rows.
    fn fetch_all<R: Row>(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
    ) -> impl Future<Output = Result<Vec<R>, sqlx::Error>> + Send;
}

/// bandeja's store as the shop uses it: its connections run the shop's SQL ([`Sql`]), and it
/// keeps the sagas' state ([`SagaStore`]: the order saga, read back by `GET /orders/{id}`).
pub trait ShopDb: Store<Conn: Sql> + SagaStore {
    /// The DDL dialect.
    const DIALECT: Dialect;

    /// A connection lent by the pool (it goes back on drop).
    type Pooled: DerefMut<Target = Self::Conn> + Send;

    /// Takes a connection from the pool, for reads outside a transaction.
    fn acquire(&self) -> impl Future<Output = Result<Self::Pooled, sqlx::Error>> + Send;

    /// Begins a transaction that will write. On SQLite it takes the write lock at once
    /// (`BEGIN IMMEDIATE`), so it waits for its turn instead of failing on upgrade.
    fn begin_write(&self) -> impl Future<Output = Result<Self::Tx, sqlx::Error>> + Send;

    /// Commits a transaction from [`ShopDb::begin_write`].
    fn commit_write(tx: Self::Tx) -> impl Future<Output = Result<(), sqlx::Error>> + Send;
}

/// The SQL dialect of a backend, for the DDL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl Dialect {
    /// Fills a DDL template: `{id}` becomes an auto-generated `BIGINT` primary key and
    /// `{timestamp}` a timestamp column type.
    pub fn ddl(self, template: &str) -> String {
        let (id, timestamp) = match self {
            Dialect::Sqlite => ("INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT"),
            Dialect::Postgres => (
                "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
                "TIMESTAMPTZ",
            ),
        };
        template
            .replace("{id}", id)
            .replace("{timestamp}", timestamp)
    }

    /// A statement that serializes concurrent shop migrations inside their transaction
    /// (SQLite needs none: its write transactions are exclusive already).
    fn migration_lock(self) -> Option<&'static str> {
        match self {
            Dialect::Sqlite => None,
            Dialect::Postgres => Some("SELECT pg_advisory_xact_lock(4242424242)"),
        }
    }

    /// A statement that keeps the `IF NOT EXISTS` DDL of a migration from filling the logs
    /// with "already exists, skipping" notices at every start (PostgreSQL only, for the
    /// rest of the transaction).
    fn quiet_notices(self) -> Option<&'static str> {
        match self {
            Dialect::Sqlite => None,
            Dialect::Postgres => Some("SET LOCAL client_min_messages = warning"),
        }
    }
}

/// Creates the shop's tables (each module's own) and seeds the catalog and the stock, in
/// one transaction. Idempotent: run it at every start, after bandeja's `store.migrate()`.
pub async fn migrate<D: ShopDb>(db: &D) -> Result<(), sqlx::Error> {
    let mut tx = db.begin_write().await?;
    let conn = &mut *tx;
    if let Some(quiet) = D::DIALECT.quiet_notices() {
        conn.execute(quiet, &[]).await?;
    }
    if let Some(lock) = D::DIALECT.migration_lock() {
        conn.execute(lock, &[]).await?;
    }
    let modules = [
        crate::catalog::SCHEMA,
        crate::order::SCHEMA,
        crate::billing::SCHEMA,
        crate::inventory::SCHEMA,
        crate::shipping::SCHEMA,
        crate::notification::SCHEMA,
    ];
    for statement in modules.into_iter().flatten() {
        conn.execute(&D::DIALECT.ddl(statement), &[]).await?;
    }
    crate::catalog::seed(conn).await?;
    crate::inventory::seed(conn).await?;
    D::commit_write(tx).await
}
