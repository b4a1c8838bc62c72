#![doc = include_str!("../README.md")]

mod admin;
mod attempts;
mod busy;
mod claim;
mod completion;
mod decode;
mod queries;
mod relay;
mod release;
mod sagas;
mod staleness;
mod store;
mod subscriptions;

pub use release::reusable_connection;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use bandeja_core::config::CompletionModes;
use bandeja_core::wake::Wakers;
use bandeja_core::{BoxKind, HandlerContext, StoreError, StoreErrorKind};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::queries::BoxQueries;

/// The sqlx this store is built on, for your own queries: with `bandeja::sqlite::sqlx` your
/// connections and transactions are the store's types (a `sqlx` of another version in your
/// own dependencies gives trait errors that name neither).
pub use sqlx;

/// What a handler on this store receives: `ctx: &mut Context<'_>` (the
/// [`HandlerContext`] of [`SqliteStore`], its transaction a SQLite one).
pub type Context<'t> = HandlerContext<'t, SqliteStore>;

/// The migrations of the four boxes (also runnable from the CLI).
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The SQLite store: the embedded default. Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    /// The application's pool ([`SqliteStore::pool`]).
    pool: SqlitePool,
    /// The workers' pool: the store's own claims, relays, outcome writes and the handlers'
    /// transactions (the same pool as `pool` for [`SqliteStore::from_pool`] and in-memory
    /// databases).
    workers: SqlitePool,
    inner: Arc<Inner>,
    /// The SQL of each box, for this handle's completion modes.
    queries: Arc<[BoxQueries; 4]>,
    /// The statements of the events' one-transaction relay.
    relay: Arc<crate::relay::RelaySql>,
}

struct Inner {
    wakers: Wakers,
}

fn index(box_kind: BoxKind) -> usize {
    match box_kind {
        BoxKind::OutboxEvents => 0,
        BoxKind::InboxEvents => 1,
        BoxKind::OutboxCommands => 2,
        BoxKind::InboxCommands => 3,
    }
}

/// SQLITE_BUSY, SQLITE_LOCKED and their extended codes (BUSY_RECOVERY, BUSY_SNAPSHOT,
/// BUSY_TIMEOUT, LOCKED_SHAREDCACHE), I/O and pool failures: trying again may succeed.
pub(crate) fn is_transient(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => {
            matches!(
                db.code().as_deref(),
                Some("5" | "6" | "261" | "262" | "517" | "773")
            )
        }
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        _ => false,
    }
}

pub(crate) fn sqlx_error(operation: &'static str, error: sqlx::Error) -> StoreError {
    let kind = match &error {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreErrorKind::Duplicate,
        _ if is_transient(&error) => StoreErrorKind::Transient,
        // A box table that is not there: the migrations have not run.
        sqlx::Error::Database(db) if db.message().starts_with("no such table") => {
            StoreErrorKind::Migration
        }
        sqlx::Error::Database(_) | sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => {
            StoreErrorKind::Permanent
        }
        sqlx::Error::Migrate(_) => StoreErrorKind::Migration,
        _ => StoreErrorKind::Transient,
    };
    StoreError::new(kind, operation, error)
}

/// One of [`SqliteStore::connect`]'s pools, its connections of `role`.
async fn open_pool(
    options: SqliteConnectOptions,
    role: busy::Role,
    in_memory: bool,
) -> Result<SqlitePool, StoreError> {
    SqlitePoolOptions::new()
        .max_connections(if in_memory { 1 } else { 24 })
        .min_connections(1)
        .acquire_timeout(Duration::from_secs(60))
        // A connection is a file handle in this process that nothing closes from outside:
        // sqlx's ping before lending (a hop to the connection's thread and back before every
        // transaction and claim) finds nothing, and it still pings on release.
        .test_before_acquire(false)
        .after_connect(move |conn, _| Box::pin(crate::busy::install(conn, role)))
        .after_release(|conn, _| Box::pin(crate::release::reusable_connection(conn)))
        .connect_with(options)
        .await
        .map_err(|e| sqlx_error("open the SQLite database", e))
}

impl SqliteStore {
    /// Opens (creating the file if missing) a SQLite database in WAL mode, with a pool
    /// suited to bandeja's workers. `url` is `sqlite://path/to/file.db` or `sqlite::memory:`.
    pub async fn connect(url: &str) -> Result<SqliteStore, StoreError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| sqlx_error("parse the SQLite URL", e))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(crate::busy::TIMEOUT)
            .foreign_keys(true);
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        // An in-memory database exists per connection: keep exactly one, in one pool.
        let pool = open_pool(options.clone(), busy::Role::Application, in_memory).await?;
        if in_memory {
            return Ok(SqliteStore::from_pool(pool));
        }
        let workers = open_pool(options, busy::Role::Workers, false).await?;
        Ok(SqliteStore::from_pools(pool, workers))
    }

    /// Wraps an existing pool (configure WAL and a busy timeout on it). Its connections keep
    /// SQLite's own busy handler, which sleeps up to 100 ms between tries for the write
    /// lock: [`SqliteStore::connect`] installs one that is woken by each commit instead.
    /// It also closes a connection that comes back to the pool still counted inside a
    /// transaction (a handler ran `COMMIT` itself); a pool of your own should do the same
    /// in its `after_release` hook ([`reusable_connection`]), or such a connection's next
    /// `BEGIN IMMEDIATE` fails.
    pub fn from_pool(pool: SqlitePool) -> SqliteStore {
        SqliteStore::from_pools(pool.clone(), pool)
    }

    fn from_pools(pool: SqlitePool, workers: SqlitePool) -> SqliteStore {
        SqliteStore {
            pool,
            workers,
            inner: Arc::new(Inner {
                wakers: Wakers::new(),
            }),
            queries: Arc::new(BoxKind::ALL.map(|b| BoxQueries::new(b, CompletionModes::default()))),
            relay: Arc::new(crate::relay::RelaySql::events()),
        }
    }

    /// The pool: use it for your own tables, so your transactions and bandeja's share a database.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The workers' pool (see [`SqliteStore`]'s fields): what the store's own statements
    /// run on, so that the application's writes go first ([`busy`]).
    pub(crate) fn workers(&self) -> &SqlitePool {
        &self.workers
    }

    /// A worker's write transaction (`BEGIN IMMEDIATE`), after giving way to a waiting
    /// application writer.
    pub(crate) async fn begin_immediate(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        busy::give_way().await;
        self.workers.begin_with("BEGIN IMMEDIATE").await
    }

    pub(crate) fn queries(&self, box_kind: BoxKind) -> &BoxQueries {
        &self.queries[index(box_kind)]
    }

    pub(crate) fn relay_sql(&self) -> &crate::relay::RelaySql {
        &self.relay
    }

    /// This handle with the SQL of `modes` (same pool and signals).
    pub(crate) fn with_modes(&self, modes: CompletionModes) -> SqliteStore {
        SqliteStore {
            pool: self.pool.clone(),
            workers: self.workers.clone(),
            inner: self.inner.clone(),
            queries: Arc::new(BoxKind::ALL.map(|b| BoxQueries::new(b, modes))),
            relay: self.relay.clone(),
        }
    }
}
