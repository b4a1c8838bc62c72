//! The database backend of the shop: a small trait over bandeja's stores, so every module
//! runs unchanged on SQLite and PostgreSQL.
//!
//! [`Backend`] is what differs between the two databases (how a write transaction begins,
//! the DDL dialect); each module adds its own repository trait with the few queries it
//! needs, implemented for both stores by one `macro_rules!` (sqlx accepts `$1` placeholders
//! on SQLite too, so the SQL text is shared). [`ShopDb`] is all of them together.

use async_trait::async_trait;
use bandeja::sqlite::SqliteStore;
use bandeja::Store;

use crate::catalog::CatalogRepository;
use crate::inventory::InventoryRepository;
use crate::notification::NotificationRepository;
use crate::order::OrderRepository;

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
}

/// What differs between the databases.
#[async_trait]
pub trait Backend: Store {
    /// The DDL dialect.
    const DIALECT: Dialect;

    /// Begins a transaction that will write. On SQLite it takes the write lock at once
    /// (`BEGIN IMMEDIATE`), so it waits for its turn instead of failing on upgrade.
    async fn begin_write(&self) -> Result<Self::Tx, sqlx::Error>;

    /// Commits a transaction from [`Backend::begin_write`] (or the store's `begin`).
    async fn commit_write(tx: Self::Tx) -> Result<(), sqlx::Error>;

    /// Runs one statement without parameters.
    async fn execute(conn: &mut Self::Conn, sql: &str) -> Result<(), sqlx::Error>;
}

/// Everything the shop needs from its database: one bound for the module code.
pub trait ShopDb:
    Backend + CatalogRepository + OrderRepository + InventoryRepository + NotificationRepository
{
}

impl<T> ShopDb for T where
    T: Backend + CatalogRepository + OrderRepository + InventoryRepository + NotificationRepository
{
}

/// Invokes a `macro_rules!` once per store type (SQLite, and PostgreSQL with the
/// `postgres` feature): how each module implements its repository for both.
macro_rules! for_each_store {
    ($implement:ident) => {
        $implement!(bandeja::sqlite::SqliteStore);
        #[cfg(feature = "postgres")]
        $implement!(bandeja::postgres::PgStore);
    };
}
pub(crate) use for_each_store;

#[async_trait]
impl Backend for SqliteStore {
    const DIALECT: Dialect = Dialect::Sqlite;

    async fn begin_write(&self) -> Result<Self::Tx, sqlx::Error> {
        self.pool().begin_with("BEGIN IMMEDIATE").await
    }

    async fn commit_write(tx: Self::Tx) -> Result<(), sqlx::Error> {
        tx.commit().await
    }

    async fn execute(conn: &mut Self::Conn, sql: &str) -> Result<(), sqlx::Error> {
        sqlx::query(sql).execute(conn).await.map(drop)
    }
}

#[cfg(feature = "postgres")]
#[async_trait]
impl Backend for bandeja::postgres::PgStore {
    const DIALECT: Dialect = Dialect::Postgres;

    async fn begin_write(&self) -> Result<Self::Tx, sqlx::Error> {
        self.pool().begin().await
    }

    async fn commit_write(tx: Self::Tx) -> Result<(), sqlx::Error> {
        tx.commit().await
    }

    async fn execute(conn: &mut Self::Conn, sql: &str) -> Result<(), sqlx::Error> {
        sqlx::query(sql).execute(conn).await.map(drop)
    }
}

/// Creates the shop's tables (each module's own) and seeds the catalog and the stock, in
/// one transaction. Idempotent: run it at every start, after bandeja's `store.migrate()`.
pub async fn migrate<D: ShopDb>(db: &D) -> Result<(), sqlx::Error> {
    let mut tx = db.begin_write().await?;
    if let Some(lock) = D::DIALECT.migration_lock() {
        D::execute(&mut *tx, lock).await?;
    }
    let modules = [
        crate::catalog::SCHEMA,
        crate::order::SCHEMA,
        crate::inventory::SCHEMA,
        crate::notification::SCHEMA,
    ];
    for statement in modules.into_iter().flatten() {
        D::execute(&mut *tx, &D::DIALECT.ddl(statement)).await?;
    }
    crate::catalog::seed::<D>(&mut *tx).await?;
    crate::inventory::seed::<D>(&mut *tx).await?;
    D::commit_write(tx).await
}
