//! The mixed-fleet tests' half of the library (issue 14, item 7): the message types of a
//! fleet whose versions differ, the handler every subscriber of the `fleet-node` binary
//! runs, and the tables it records into, on PostgreSQL and on SQLite.
//!
//! - Events [`Noted`] (the type every version subscribes to) and [`Charged`] (a type only
//!   the new version subscribes to); commands [`Ship`] (handled by every version) and
//!   [`Refund`] (a handler only the new version has).
//! - [`Recording`]: the handler of all four. Each run is recorded in `fleet_runs` when it
//!   enters and when it leaves, through a pool of its own (outside the handler's
//!   transaction, so a run whose work rolled back is still seen: "no handler ran twice" is
//!   read from there); it may take a while (awaited inside its transaction, like a call to
//!   another service); then it inserts its effect row into `fleet_effects` inside the
//!   handler's transaction (committed with the inbox row's COMPLETED mark, or not at all).
//! - On PostgreSQL both tables live in the store's schema; on SQLite the effects live in
//!   the store's file and the runs in a file of their own ([`RunLog::sqlite`]), so
//!   recording a run never waits for the store's one writer.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use bandeja::postgres::PgStore;
use bandeja::sqlite::SqliteStore;
use bandeja::{
    Command, CommandHandler, Event, EventHandler, HandlerContext, HandlerError, Payload, Store,
};
use sqlx::postgres::PgPool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

/// The event every version of the fleet subscribes to (type `T` of the issue).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Noted {
    /// Emission number (per emitting process).
    pub n: u64,
}

impl Payload for Noted {
    const TYPE: &'static str = "fleet.Noted";
}

/// An event type only the new version subscribes to: an old process that receives one
/// from a broker must store it for the new version's subscriber.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Charged {
    /// Emission number (per emitting process).
    pub n: u64,
}

impl Payload for Charged {
    const TYPE: &'static str = "fleet.Charged";
}

/// The command every version handles (`C1` of the issue).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ship {
    /// Emission number (per emitting process).
    pub n: u64,
}

impl Payload for Ship {
    const TYPE: &'static str = "fleet.Ship";
}

/// The command only the new version has a handler for (`C2` of the issue).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Refund {
    /// Emission number (per emitting process).
    pub n: u64,
}

impl Payload for Refund {
    const TYPE: &'static str = "fleet.Refund";
}

/// The four message types by their short names on the command line (`noted`, `charged`,
/// `ship`, `refund`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FleetType {
    /// [`Noted`].
    Noted,
    /// [`Charged`].
    Charged,
    /// [`Ship`].
    Ship,
    /// [`Refund`].
    Refund,
}

impl FleetType {
    /// Whether it is a command type.
    #[must_use]
    pub fn is_command(self) -> bool {
        matches!(self, FleetType::Ship | FleetType::Refund)
    }

    /// The message type stored in the boxes (`fleet.Noted`…).
    #[must_use]
    pub fn message_type(self) -> &'static str {
        match self {
            FleetType::Noted => Noted::TYPE,
            FleetType::Charged => Charged::TYPE,
            FleetType::Ship => Ship::TYPE,
            FleetType::Refund => Refund::TYPE,
        }
    }
}

impl FromStr for FleetType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "noted" => Ok(FleetType::Noted),
            "charged" => Ok(FleetType::Charged),
            "ship" => Ok(FleetType::Ship),
            "refund" => Ok(FleetType::Refund),
            other => Err(format!(
                "unknown message type `{other}` (noted, charged, ship or refund)"
            )),
        }
    }
}

/// The DDL of `fleet_effects` (one row per committed handling) in the store, `schema`
/// being the PostgreSQL schema, `None` for SQLite. No unique key: a second application
/// shows as a second row.
#[must_use]
pub fn effects_ddl(schema: Option<&str>) -> String {
    let table = qualified(schema, "fleet_effects");
    format!(
        "CREATE TABLE IF NOT EXISTS {table} ( \
           message_id TEXT NOT NULL, \
           subscriber TEXT NOT NULL, \
           worker TEXT NOT NULL)"
    )
}

/// The DDL of `fleet_runs` (one row per handler run, written outside the handler's
/// transaction) on PostgreSQL in `schema`.
#[must_use]
pub fn pg_runs_ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS \"{schema}\".fleet_runs ( \
           id BIGSERIAL PRIMARY KEY, \
           message_id TEXT NOT NULL, \
           subscriber TEXT NOT NULL, \
           worker TEXT NOT NULL, \
           entered_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(), \
           exited_at TIMESTAMPTZ)"
    )
}

/// The DDL of `fleet_runs` in the SQLite runs file.
pub const SQLITE_RUNS_DDL: &str = "CREATE TABLE IF NOT EXISTS fleet_runs ( \
       id INTEGER PRIMARY KEY AUTOINCREMENT, \
       message_id TEXT NOT NULL, \
       subscriber TEXT NOT NULL, \
       worker TEXT NOT NULL, \
       entered_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')), \
       exited_at TEXT)";

fn qualified(schema: Option<&str>, table: &str) -> String {
    match schema {
        Some(schema) => format!("\"{schema}\".{table}"),
        None => table.to_owned(),
    }
}

/// Creates `fleet_effects` and `fleet_runs` in a PostgreSQL schema.
pub async fn create_pg_tables(pool: &PgPool, schema: &str) -> Result<(), sqlx::Error> {
    sqlx::query(&effects_ddl(Some(schema)))
        .execute(pool)
        .await?;
    sqlx::query(&pg_runs_ddl(schema)).execute(pool).await?;
    Ok(())
}

/// Creates `fleet_effects` in a SQLite store's file.
pub async fn create_sqlite_effects(pool: &SqlitePool) -> Result<(), sqlx::Error> {
    sqlx::query(&effects_ddl(None)).execute(pool).await?;
    Ok(())
}

/// Opens (creating it if missing) the SQLite file of the runs, in WAL mode with a long
/// busy timeout (several processes write into it), and creates `fleet_runs`.
pub async fn open_sqlite_runs(url: &str) -> Result<SqlitePool, sqlx::Error> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(30));
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await?;
    sqlx::query(SQLITE_RUNS_DDL).execute(&pool).await?;
    Ok(pool)
}

/// Where a process records its handler runs: a pool apart from the store's.
#[derive(Clone)]
pub enum RunLog {
    /// `fleet_runs` in a PostgreSQL schema.
    Pg {
        /// The recorder's own pool.
        pool: PgPool,
        /// `INSERT … RETURNING id`.
        enter: String,
        /// `UPDATE … SET exited_at`.
        exit: String,
    },
    /// `fleet_runs` in a SQLite file of its own.
    Sqlite {
        /// The recorder's own pool.
        pool: SqlitePool,
    },
}

impl RunLog {
    /// Runs recorded into `fleet_runs` of `schema` through `pool`.
    #[must_use]
    pub fn pg(pool: PgPool, schema: &str) -> RunLog {
        RunLog::Pg {
            pool,
            enter: format!(
                "INSERT INTO \"{schema}\".fleet_runs (message_id, subscriber, worker) \
                 VALUES ($1, $2, $3) RETURNING id"
            ),
            exit: format!(
                "UPDATE \"{schema}\".fleet_runs SET exited_at = clock_timestamp() WHERE id = $1"
            ),
        }
    }

    /// Runs recorded into the SQLite file opened by [`open_sqlite_runs`].
    #[must_use]
    pub fn sqlite(pool: SqlitePool) -> RunLog {
        RunLog::Sqlite { pool }
    }

    /// Records that a run of `(id, subscriber)` entered its handler; the run's row id.
    async fn enter(&self, id: &str, subscriber: &str, worker: &str) -> Result<i64, sqlx::Error> {
        match self {
            RunLog::Pg { pool, enter, .. } => {
                sqlx::query_scalar(enter)
                    .bind(id)
                    .bind(subscriber)
                    .bind(worker)
                    .fetch_one(pool)
                    .await
            }
            RunLog::Sqlite { pool } => {
                sqlx::query_scalar(
                    "INSERT INTO fleet_runs (message_id, subscriber, worker) \
                     VALUES (?1, ?2, ?3) RETURNING id",
                )
                .bind(id)
                .bind(subscriber)
                .bind(worker)
                .fetch_one(pool)
                .await
            }
        }
    }

    /// Records that run `run` left its handler.
    async fn exit(&self, run: i64) -> Result<(), sqlx::Error> {
        match self {
            RunLog::Pg { pool, exit, .. } => {
                sqlx::query(exit).bind(run).execute(pool).await?;
            }
            RunLog::Sqlite { pool } => {
                sqlx::query(
                    "UPDATE fleet_runs SET exited_at = strftime('%Y-%m-%d %H:%M:%f', 'now') \
                     WHERE id = ?1",
                )
                .bind(run)
                .execute(pool)
                .await?;
            }
        }
        Ok(())
    }
}

/// A store the [`Recording`] handler writes its effect rows into, in the handler's
/// transaction.
#[async_trait]
pub trait EffectStore: Store + Clone {
    /// The `INSERT` of one effect row (`message_id`, `subscriber`, `worker`).
    fn effect_sql(&self) -> String;

    /// Runs `sql` (from [`Self::effect_sql`]) on the handler's connection.
    async fn insert_effect(
        conn: &mut Self::Conn,
        sql: &str,
        id: &str,
        subscriber: &str,
        worker: &str,
    ) -> Result<(), sqlx::Error>;
}

#[async_trait]
impl EffectStore for PgStore {
    fn effect_sql(&self) -> String {
        format!(
            "INSERT INTO \"{}\".fleet_effects (message_id, subscriber, worker) VALUES ($1, $2, $3)",
            self.schema()
        )
    }

    async fn insert_effect(
        conn: &mut Self::Conn,
        sql: &str,
        id: &str,
        subscriber: &str,
        worker: &str,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(sql)
            .bind(id)
            .bind(subscriber)
            .bind(worker)
            .execute(conn)
            .await?;
        Ok(())
    }
}

#[async_trait]
impl EffectStore for SqliteStore {
    fn effect_sql(&self) -> String {
        "INSERT INTO fleet_effects (message_id, subscriber, worker) VALUES (?1, ?2, ?3)".to_owned()
    }

    async fn insert_effect(
        conn: &mut Self::Conn,
        sql: &str,
        id: &str,
        subscriber: &str,
        worker: &str,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(sql)
            .bind(id)
            .bind(subscriber)
            .bind(worker)
            .execute(conn)
            .await?;
        Ok(())
    }
}

/// The handler of every subscriber and command handler of a `fleet-node`: records its run
/// (see the module), takes its subscriber's time if one is set, writes its effect.
pub struct Recording<S> {
    worker: String,
    runs: RunLog,
    takes: HashMap<String, Duration>,
    effect_sql: String,
    store: PhantomData<fn() -> S>,
}

impl<S> Clone for Recording<S> {
    fn clone(&self) -> Self {
        Recording {
            worker: self.worker.clone(),
            runs: self.runs.clone(),
            takes: self.takes.clone(),
            effect_sql: self.effect_sql.clone(),
            store: PhantomData,
        }
    }
}

impl<S: EffectStore> Recording<S> {
    /// A handler of `store` labelling its rows with `worker`; a run of a subscriber named in
    /// `takes` lasts that long.
    #[must_use]
    pub fn new(
        store: &S,
        worker: impl Into<String>,
        runs: RunLog,
        takes: HashMap<String, Duration>,
    ) -> Self {
        Recording {
            worker: worker.into(),
            runs,
            takes,
            effect_sql: store.effect_sql(),
            store: PhantomData,
        }
    }

    async fn run(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        id: uuid::Uuid,
    ) -> Result<(), HandlerError> {
        let id = id.to_string();
        let subscriber = ctx.subscriber().to_owned();
        let run = self
            .runs
            .enter(&id, &subscriber, &self.worker)
            .await
            .map_err(|e| HandlerError::retriable(format!("could not record a run: {e}")))?;
        if let Some(takes) = self.takes.get(&subscriber) {
            tokio::time::sleep(*takes).await;
        }
        S::insert_effect(ctx.conn(), &self.effect_sql, &id, &subscriber, &self.worker).await?;
        self.runs
            .exit(run)
            .await
            .map_err(|e| HandlerError::retriable(format!("could not record a run's end: {e}")))
    }
}

/// Every fleet payload is recorded alike: one impl per handler trait serves all of them
/// (the registration names the payload type).
impl<S: EffectStore, T: Payload> EventHandler<S, T> for Recording<S> {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<T>,
    ) -> Result<(), HandlerError> {
        self.run(ctx, event.id.0).await
    }
}

impl<S: EffectStore, T: Payload> CommandHandler<S, T> for Recording<S> {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        command: Command<T>,
    ) -> Result<(), HandlerError> {
        self.run(ctx, command.id.0).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_parse() {
        assert_eq!("noted".parse(), Ok(FleetType::Noted));
        assert_eq!("refund".parse(), Ok(FleetType::Refund));
        assert!("Noted".parse::<FleetType>().is_err());
        assert!(FleetType::Ship.is_command());
        assert!(!FleetType::Charged.is_command());
        assert_eq!(FleetType::Charged.message_type(), "fleet.Charged");
    }

    #[test]
    fn ddl_is_qualified_on_postgres_only() {
        assert!(effects_ddl(Some("s1")).contains("\"s1\".fleet_effects"));
        assert!(effects_ddl(None).contains("EXISTS fleet_effects"));
        assert!(pg_runs_ddl("s1").contains("\"s1\".fleet_runs"));
    }
}
