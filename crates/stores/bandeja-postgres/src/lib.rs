#![doc = include_str!("../README.md")]

mod admin;
mod attempts;
mod columns;
mod completion;
mod decode;
mod maintenance;
mod pool_check;
mod queries;
mod relay;
mod sagas;
mod staleness;
mod store;
mod subscriptions;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tls;
mod transient;

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bandeja_core::config::CompletionModes;
use bandeja_core::wake::Wakers;
use bandeja_core::{BoxKind, HandlerContext, StoreError, StoreErrorKind};
use sqlx::postgres::PgPool;

use crate::queries::BoxQueries;
use crate::relay::RelayHandle;

/// The sqlx this store is built on, for your own queries: with `bandeja::postgres::sqlx` your
/// connections and transactions are the store's types (a `sqlx` of another version in your
/// own dependencies gives trait errors that name neither).
pub use sqlx;

/// What a handler on this store receives: `ctx: &mut Context<'_>` (the
/// [`HandlerContext`] of [`PgStore`], its transaction a PostgreSQL one).
pub type Context<'t> = HandlerContext<'t, PgStore>;

/// The migrations of the four boxes (also runnable from the CLI). They use unqualified table
/// names: run them with the store's schema as the only `search_path` entry, as
/// [`Store::migrate`](bandeja_core::Store::migrate) does.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The schema of [`PgStore::connect`] and of [`PgStore::from_pool`] without a schema.
///
/// A dedicated schema keeps bandeja's `_sqlx_migrations` table apart from the application's
/// own sqlx migrations (which live in `public` by default).
pub const DEFAULT_SCHEMA: &str = "bandeja";

/// How [`PgStore::connect_with_options`] connects: the schema and the pool's size and
/// patience.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgStoreOptions {
    /// The schema holding the four boxes. Default [`DEFAULT_SCHEMA`].
    pub schema: String,
    /// Connections the pool may open. Default 16. Lease renewals use two connections of
    /// their own besides (opened when first needed), so that handlers holding every
    /// connection of this pool never keep their leases from being renewed.
    pub max_connections: u32,
    /// How long an operation waits for a connection before it fails with a transient
    /// [`StoreError`]: while the database is down, the longest an `emit` takes to say so
    /// (it succeeds if the database is back sooner). Default 5 s.
    pub acquire_timeout: Duration,
}

impl Default for PgStoreOptions {
    fn default() -> Self {
        PgStoreOptions {
            schema: DEFAULT_SCHEMA.to_owned(),
            max_connections: 16,
            acquire_timeout: Duration::from_secs(5),
        }
    }
}

impl PgStoreOptions {
    /// The defaults with the boxes in `schema`.
    #[must_use]
    pub fn with_schema(schema: impl Into<String>) -> Self {
        PgStoreOptions {
            schema: schema.into(),
            ..PgStoreOptions::default()
        }
    }

    fn validate(&self) -> Result<(), StoreError> {
        validate_schema(&self.schema)?;
        let problem = if self.max_connections == 0 {
            Some("max_connections is 0: the pool needs at least one connection")
        } else if self.acquire_timeout.is_zero() {
            Some("acquire_timeout is zero: give operations some time to get a connection")
        } else {
            None
        };
        match problem {
            Some(problem) => Err(StoreError::new(
                StoreErrorKind::Permanent,
                "validate the store options",
                problem,
            )),
            None => Ok(()),
        }
    }
}

/// Connections of the lease-renewal pool (beside the main pool).
const LEASE_CONNECTIONS: u32 = 2;

/// Longest identifier PostgreSQL keeps (`NAMEDATALEN - 1`).
const MAX_IDENTIFIER: usize = 63;

/// The PostgreSQL store: the production store. Cheap to clone; every clone shares the pool,
/// the prepared SQL and the wake-up signals.
///
/// The `NOTIFY` relay (see the crate documentation) runs while at least one clone is alive
/// and stops when the last one is dropped.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    inner: Arc<Inner>,
    /// The SQL of each box, for this handle's completion modes.
    queries: Arc<[BoxQueries; 4]>,
}

struct Inner {
    schema: String,
    channel: String,
    wakers: Wakers,
    relay: Mutex<Option<RelayHandle>>,
    /// Two connections of their own for lease renewals, opened when first needed: the
    /// handlers of a busy process may hold every connection of the main pool for as long
    /// as they run, and a renewal that waits for one of them lets leases run out.
    leases: PgPool,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("schema", &self.inner.schema)
            .field("channel", &self.inner.channel)
            .finish_non_exhaustive()
    }
}

fn index(box_kind: BoxKind) -> usize {
    match box_kind {
        BoxKind::OutboxEvents => 0,
        BoxKind::InboxEvents => 1,
        BoxKind::OutboxCommands => 2,
        BoxKind::InboxCommands => 3,
    }
}

/// `query_canceled`: a statement timeout. Transient for bandeja's own statements (the
/// database is overloaded), not for a handler's (see [`transient`]).
const QUERY_CANCELED: &str = "57014";

/// Maps a driver error to a [`StoreError`] of the right kind.
pub(crate) fn sqlx_error(operation: &'static str, error: sqlx::Error) -> StoreError {
    let kind = match &error {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreErrorKind::Duplicate,
        sqlx::Error::Database(db) => match db.code().as_deref() {
            Some(code) if transient::is_transient_code(code) || code == QUERY_CANCELED => {
                StoreErrorKind::Transient
            }
            // undefined table / invalid schema name: the migrations have not run.
            Some("42P01" | "3F000") => StoreErrorKind::Migration,
            _ => StoreErrorKind::Permanent,
        },
        sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. }
        | sqlx::Error::TypeNotFound { .. }
        | sqlx::Error::Encode(_)
        | sqlx::Error::Configuration(_) => StoreErrorKind::Permanent,
        sqlx::Error::Migrate(_) => StoreErrorKind::Migration,
        // Io, Tls, Protocol, PoolTimedOut, PoolClosed, WorkerCrashed...
        _ => StoreErrorKind::Transient,
    };
    StoreError::new(kind, operation, error)
}

/// Checks that `schema` is a plain lowercase identifier: `[a-z_][a-z0-9_]{0,62}`, not
/// starting with the reserved `pg_`.
fn validate_schema(schema: &str) -> Result<(), StoreError> {
    let mut chars = schema.chars();
    let valid_start = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let valid_rest = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if valid_start && valid_rest && schema.len() <= MAX_IDENTIFIER && !schema.starts_with("pg_") {
        return Ok(());
    }
    Err(StoreError::new(
        StoreErrorKind::Permanent,
        "validate the schema name",
        format!(
            "invalid schema name `{schema}`: use 1 to 63 characters of a-z, 0-9 and _, starting \
             with a letter or _ (and not with the reserved `pg_`)"
        ),
    ))
}

/// The `LISTEN`/`NOTIFY` channel of a schema: `bandeja_<schema>`, cut to 63 bytes.
fn channel_of(schema: &str) -> String {
    let mut channel = format!("bandeja_{schema}");
    channel.truncate(MAX_IDENTIFIER); // ASCII only: always a char boundary
    channel
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host/db`) with the boxes in the schema
    /// [`DEFAULT_SCHEMA`] (`bandeja`). See [`PgStore::connect_with_schema`].
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        Self::connect_with_schema(url, DEFAULT_SCHEMA).await
    }

    /// Connects to `url` with the four boxes (and sqlx's migrations table) in `schema`,
    /// which must match `[a-z_][a-z0-9_]{0,62}`. Creates the schema if it is missing and
    /// starts the `NOTIFY` relay; it is listening when this returns. Run
    /// [`Store::migrate`](bandeja_core::Store::migrate) before use.
    pub async fn connect_with_schema(url: &str, schema: &str) -> Result<PgStore, StoreError> {
        Self::connect_with_options(url, &PgStoreOptions::with_schema(schema)).await
    }

    /// Connects to `url` as [`PgStore::connect_with_schema`] does, with the pool's size and
    /// acquire timeout of `options`.
    pub async fn connect_with_options(
        url: &str,
        options: &PgStoreOptions,
    ) -> Result<PgStore, StoreError> {
        options.validate()?;
        tls::check_tls_parameters(url)
            .map_err(|e| StoreError::new(StoreErrorKind::Permanent, "connect to PostgreSQL", e))?;
        let pool = pool_check::pool_options()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect(url)
            .await
            .map_err(|e| match tls::tls_failure_hint(&e.to_string()) {
                // A refused certificate stays refused: retrying cannot help.
                Some(hint) => StoreError::new(
                    StoreErrorKind::Permanent,
                    "connect to PostgreSQL",
                    format!("{e}; {hint}"),
                ),
                None => sqlx_error("connect to PostgreSQL", e),
            })?;
        let store = PgStore::from_pool(pool, Some(&options.schema))?;
        store.create_schema().await?;
        store.listen().await?;
        Ok(store)
    }

    /// Wraps an existing pool, with the boxes in `schema` (default [`DEFAULT_SCHEMA`]).
    /// Neither touches the database nor starts the `NOTIFY` relay: the relay starts at the
    /// first [`Store::wakers`](bandeja_core::Store::wakers) call made inside a Tokio runtime,
    /// or with [`PgStore::listen`].
    pub fn from_pool(pool: PgPool, schema: Option<&str>) -> Result<PgStore, StoreError> {
        let schema = schema.unwrap_or(DEFAULT_SCHEMA);
        validate_schema(schema)?;
        let channel = channel_of(schema);
        let leases = pool_check::pool_options()
            .max_connections(LEASE_CONNECTIONS)
            .min_connections(0)
            .acquire_timeout(pool.options().get_acquire_timeout())
            .connect_lazy_with((*pool.connect_options()).clone());
        Ok(PgStore {
            pool,
            queries: Arc::new(
                BoxKind::ALL
                    .map(|b| BoxQueries::new(schema, &channel, b, CompletionModes::default())),
            ),
            inner: Arc::new(Inner {
                schema: schema.to_owned(),
                channel,
                wakers: Wakers::new(),
                relay: Mutex::new(None),
                leases,
            }),
        })
    }

    /// The pool: use it for your own tables, so your transactions and bandeja's share a database.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The pool lease renewals go through (see [`Store::renew`](bandeja_core::Store::renew)).
    pub(crate) fn lease_pool(&self) -> &PgPool {
        &self.inner.leases
    }

    /// The schema holding the four boxes.
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }

    /// The `LISTEN`/`NOTIFY` channel: `bandeja_<schema>` (cut to 63 bytes). Each commit that
    /// adds rows to a box sends the box's table name (`outbox_events`...) as payload.
    pub fn channel(&self) -> &str {
        &self.inner.channel
    }

    /// Starts the `NOTIFY` relay if it is not running yet, and returns once it listens.
    /// If the relay was already started (by an earlier call, or in the background by
    /// `wakers()`), returns at once.
    pub async fn listen(&self) -> Result<(), StoreError> {
        if self.relay_slot().is_some() {
            return Ok(());
        }
        let pool = relay::listener_pool(&self.pool);
        let listener = relay::open(&pool, &self.inner.channel)
            .await
            .map_err(|e| sqlx_error("listen for notifications", e))?;
        let mut slot = self.relay_slot();
        if slot.is_none() {
            *slot = Some(relay::spawn(
                pool,
                self.inner.channel.clone(),
                self.inner.wakers.clone(),
                Some(listener),
            ));
        }
        Ok(())
    }

    /// Starts the relay in the background if it is not running and a Tokio runtime is at hand.
    fn ensure_relay(&self) {
        let mut slot = self.relay_slot();
        if slot.is_none() && tokio::runtime::Handle::try_current().is_ok() {
            *slot = Some(relay::spawn(
                relay::listener_pool(&self.pool),
                self.inner.channel.clone(),
                self.inner.wakers.clone(),
                None,
            ));
        }
    }

    fn relay_slot(&self) -> std::sync::MutexGuard<'_, Option<RelayHandle>> {
        self.inner
            .relay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `CREATE SCHEMA IF NOT EXISTS`, in a transaction whose `client_min_messages` is
    /// `warning`: an existing schema is the usual case, not worth PostgreSQL's "already
    /// exists, skipping" notice in the logs.
    async fn create_schema(&self) -> Result<(), StoreError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| sqlx_error("create the schema", e))?;
        sqlx::query("SET LOCAL client_min_messages = warning")
            .execute(&mut *tx)
            .await
            .map_err(|e| sqlx_error("create the schema", e))?;
        self.create_schema_on(&mut tx).await?;
        tx.commit()
            .await
            .map_err(|e| sqlx_error("create the schema", e))
    }

    /// `CREATE SCHEMA IF NOT EXISTS` on `conn`, tolerating a concurrent creation.
    pub(crate) async fn create_schema_on(
        &self,
        conn: &mut sqlx::PgConnection,
    ) -> Result<(), StoreError> {
        let sql = format!("CREATE SCHEMA IF NOT EXISTS \"{}\"", self.inner.schema);
        match sqlx::query(&sql).execute(&mut *conn).await {
            Ok(_) => Ok(()),
            // Two processes creating it at once: the loser sees a unique violation.
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Ok(()),
            Err(e) => Err(sqlx_error("create the schema", e)),
        }
    }

    pub(crate) fn queries(&self, box_kind: BoxKind) -> &BoxQueries {
        &self.queries[index(box_kind)]
    }

    /// This handle with the SQL of `modes` (same pool, signals and relay).
    pub(crate) fn with_modes(&self, modes: CompletionModes) -> PgStore {
        let (schema, channel) = (&self.inner.schema, &self.inner.channel);
        PgStore {
            pool: self.pool.clone(),
            inner: self.inner.clone(),
            queries: Arc::new(BoxKind::ALL.map(|b| BoxQueries::new(schema, channel, b, modes))),
        }
    }

    pub(crate) fn local_wakers(&self) -> &Wakers {
        &self.inner.wakers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_store_options_say_what_to_change() {
        assert_eq!(PgStoreOptions::default().validate().ok(), Some(()));
        let zero_pool = PgStoreOptions {
            max_connections: 0,
            ..PgStoreOptions::default()
        };
        assert!(zero_pool
            .validate()
            .is_err_and(|e| e.to_string().contains("max_connections")));
        let no_patience = PgStoreOptions {
            acquire_timeout: Duration::ZERO,
            ..PgStoreOptions::default()
        };
        assert!(no_patience
            .validate()
            .is_err_and(|e| e.to_string().contains("acquire_timeout")));
        assert!(PgStoreOptions::with_schema("Bad-Name").validate().is_err());
    }

    #[test]
    fn schema_names_are_plain_lowercase_identifiers() {
        for good in ["bandeja", "_x", "a1_b2", &"s".repeat(63)] {
            assert!(validate_schema(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Bandeja",
            "1abc",
            "a-b",
            "a b",
            "a\"b",
            "pg_boxes",
            "é",
            &"s".repeat(64),
        ] {
            let err = validate_schema(bad).expect_err(bad);
            assert_eq!(err.kind(), StoreErrorKind::Permanent);
            assert!(err.to_string().contains("invalid schema name"), "{err}");
        }
    }

    #[test]
    fn channel_is_the_schema_prefixed_and_fits_an_identifier() {
        assert_eq!(channel_of("bandeja"), "bandeja_bandeja");
        let long = "s".repeat(63);
        assert_eq!(channel_of(&long).len(), 63);
        assert!(channel_of(&long).starts_with("bandeja_sss"));
    }

    /// Every claim and relay statement sets `synchronous_commit = off` for itself, and only
    /// those (the outcome and completion statements, which handlers' work rides on, do not).
    #[test]
    fn only_claims_and_relays_skip_the_wait_for_the_flush() {
        let modes = bandeja_core::config::CompletionModes::default();
        for box_kind in BoxKind::ALL {
            let q = crate::queries::BoxQueries::new("s", "c", box_kind, modes);
            for claim in [&q.claim, &q.claim_tenant] {
                assert!(claim.contains("set_config('synchronous_commit', 'off', true)"));
            }
            // Outcomes, completions and inserts (the inbox rows of a broker's messages must
            // be durable before the broker is acknowledged) wait for the flush.
            for durable in [&q.resolve, &q.resolve_failing, &q.complete, &q.insert] {
                assert!(!durable.contains("synchronous_commit"), "{box_kind}");
            }
        }
        for box_kind in [BoxKind::OutboxEvents, BoxKind::OutboxCommands] {
            let q = crate::queries::BoxQueries::new("s", "c", box_kind, modes);
            for relay in [&q.relay, &q.relay_tenant] {
                assert!(relay.contains("set_config('synchronous_commit', 'off', true)"));
            }
        }
    }
}
