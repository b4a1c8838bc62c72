//! # bandeja-scale-tests
//!
//! Multi-process integration tests of bandeja on PostgreSQL (contract points 4, 5 and 7 of
//! the design: exactly-once effect for database work, per-key order, many instances on one
//! database with lease takeover after a crash).
//!
//! The package holds:
//! - the `scale-worker` binary: one process running bandeja workers against a schema until
//!   it is killed (or, gracefully, until SIGTERM);
//! - this library, shared by the binary and the tests: the test event ([`Tick`]), the
//!   effect tables ([`create_tables`]), the handler that writes effects and detects double
//!   application ([`EffectWriter`]), and the worker configuration ([`worker_config`]);
//! - the `chaos` binary and its library half ([`chaos`]): a workload driven through
//!   several `scale-worker` processes while they are killed and the database or the
//!   broker restarted, verified from the database at the end (over NATS, Redis or Kafka:
//!   [`nats_server`], [`redis_server`], [`kafka_mock`] and [`tansu_server`] start the
//!   run's own broker);
//! - the `fleet-node` binary and its library half ([`fleet`]): one process of a fleet whose
//!   versions subscribe to different things (SQLite or PostgreSQL, in process or over a
//!   broker), for the mixed-fleet and rolling-deploy tests;
//! - the tests in `tests/`, which start several `scale-worker` processes, kill one, and
//!   check the outcome from the database alone.
//!
//! Tests use `DATABASE_URL`, or `postgres://postgres@127.0.0.1:5432/test`.

pub mod chaos;
pub mod fleet;
pub mod kafka_mock;
pub mod nats_server;
mod own_server;
pub mod redis_server;
pub mod saga;
pub mod tansu_server;

use std::time::Duration;

use bandeja::postgres::PgStore;
use bandeja::{
    Command, CommandHandler, Config, Event, EventHandler, HandlerContext, HandlerError, Payload,
};
use sqlx::PgPool;

/// Sends the process's logs to stderr through bandeja's logging set-up: filtered by
/// `BANDEJA_LOG` (`default` when unset), as text or JSON lines (`format`, else
/// `BANDEJA_LOG_FORMAT`), as the package's binaries do. Exits (code 2) on a bad
/// `BANDEJA_LOG_FORMAT`.
pub fn log_to_stderr(default: &str, format: Option<bandeja::logging::LogFormat>) {
    let installed = bandeja::logging::Logging::new()
        .default_filter(default)
        .format(format)
        .init();
    if let Err(error) = installed {
        eprintln!("{error}");
        std::process::exit(2);
    }
}

/// The logging flag of the package's binaries (`#[command(flatten)]` it into their
/// arguments).
#[derive(Debug, Clone, clap::Args)]
pub struct LogArgs {
    /// Log lines on stderr as `text` or `json` (one object per line).
    #[arg(long, env = "BANDEJA_LOG_FORMAT", value_name = "FORMAT")]
    pub log_format: Option<bandeja::logging::LogFormat>,
}

/// The two subscribers of [`Tick`]: each gets its own inbox row, hence its own effect row.
pub const SUBSCRIBERS: [&str; 2] = ["alpha", "beta"];

/// The test event: `n` numbers the emissions (increasing in emission order).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tick {
    /// Emission number.
    pub n: u64,
}

impl Payload for Tick {
    const TYPE: &'static str = "scale.Tick";
}

/// A poison message of the chaos run: every handling of it fails permanently, so its inbox
/// rows must end FAILED with the handler's reason, and nothing else may be held up by it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Poison {
    /// Emission number.
    pub n: u64,
}

impl Payload for Poison {
    const TYPE: &'static str = "scale.Poison";
}

/// The reason a [`Poison`] message fails with (the start of its inbox rows' `last_error`).
pub const POISON_REASON: &str = "poison message rejected by design";

/// The command of the two-services tests (sent by the producer, handled by the consumer).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fulfil {
    /// Emission number.
    pub n: u64,
}

impl Payload for Fulfil {
    const TYPE: &'static str = "scale.Fulfil";
}

/// The DDL of the test's own tables in `schema` (a plain identifier, as `PgStore` requires):
/// `effects`, one row per applied `(message, subscriber)` with `seq` giving the order of
/// application, `violations`, one row per detected second application, and `runs`, one
/// row per handler run (written outside the handler's transaction, so a run whose work
/// rolled back is still seen) with when it entered and left the handler.
#[must_use]
pub fn tables_ddl(schema: &str) -> [String; 3] {
    [
        format!(
            "CREATE TABLE IF NOT EXISTS \"{schema}\".effects ( \
               seq BIGSERIAL NOT NULL, \
               message_id UUID NOT NULL, \
               subscriber TEXT NOT NULL, \
               partition_key TEXT NOT NULL, \
               n BIGINT NOT NULL, \
               worker TEXT NOT NULL, \
               PRIMARY KEY (message_id, subscriber))"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS \"{schema}\".violations ( \
               id BIGSERIAL PRIMARY KEY, \
               message_id UUID NOT NULL, \
               subscriber TEXT NOT NULL, \
               worker TEXT NOT NULL, \
               recorded_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS \"{schema}\".runs ( \
               id BIGSERIAL PRIMARY KEY, \
               message_id UUID NOT NULL, \
               subscriber TEXT NOT NULL, \
               worker TEXT NOT NULL, \
               entered_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(), \
               exited_at TIMESTAMPTZ)"
        ),
    ]
}

/// Creates the `effects`, `violations` and `runs` tables in `schema` (see [`tables_ddl`]).
pub async fn create_tables(pool: &PgPool, schema: &str) -> Result<(), sqlx::Error> {
    for ddl in tables_ddl(schema) {
        sqlx::query(&ddl).execute(pool).await?;
    }
    Ok(())
}

/// The configuration of a scale worker: the defaults, then for every group no initial
/// delay, a poll every 200 ms, 1000 retries and 1000 takeovers (random failures and kills
/// never exhaust them) with a
/// backoff of 10 ms to 100 ms and a jitter of 0.2; `events.inbox` and `events.outbox` hold
/// their claims for `lease` (`lock-at-most-for`; `lock-at-least-for` is lowered to it when
/// larger, as validation requires).
#[must_use]
pub fn worker_config(lease: Duration) -> Config {
    let mut config = Config::default();
    for group in bandeja::BoxKind::ALL {
        let g = config.group_mut(group);
        g.polling_initial_delay = Duration::ZERO;
        g.polling_interval = Duration::from_millis(200);
        g.max_retries = 1000;
        // Random kills must never exhaust the takeovers either.
        g.max_takeovers = 1000;
        g.retry_backoff_initial = Duration::from_millis(10);
        g.retry_backoff_max = Duration::from_millis(100);
        g.retry_jitter = 0.2;
    }
    for g in [&mut config.events_inbox, &mut config.events_outbox] {
        g.lock_at_most_for = lease;
        g.lock_at_least_for = g.lock_at_least_for.min(lease);
    }
    config
}

/// The handler of both subscribers. In the handler's transaction it inserts the effect
/// row of `(message, subscriber)`; if that row already exists (the message was applied
/// before: an exactly-once violation) it records a violation through a separate pooled
/// connection, which commits whatever becomes of the handler's transaction, and still
/// succeeds. With probability `fail_rate` an attempt fails (retriably) before doing
/// anything.
#[derive(Clone)]
pub struct EffectWriter {
    pool: PgPool,
    worker: String,
    fail_rate: f64,
    insert_effect: String,
    insert_violation: String,
    /// The schema of the test's tables.
    schema: String,
    /// With a handler time: how long each run takes, and the statements recording it.
    slow: Option<SlowRuns>,
}

/// A simulated handler time, each run recorded in `runs` through a pool of its own
/// (outside the handler's transaction, and never competing with the store's pool, whose
/// connections the running handlers hold).
#[derive(Clone)]
struct SlowRuns {
    pool: PgPool,
    takes: std::time::Duration,
    enter: String,
    exit: String,
}

impl EffectWriter {
    /// A writer into the tables of `store`'s schema, labelling rows with `worker`.
    #[must_use]
    pub fn new(store: &PgStore, worker: impl Into<String>, fail_rate: f64) -> Self {
        let schema = store.schema();
        EffectWriter {
            pool: store.pool().clone(),
            worker: worker.into(),
            fail_rate,
            insert_effect: format!(
                "INSERT INTO \"{schema}\".effects (message_id, subscriber, partition_key, n, worker) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING seq"
            ),
            insert_violation: format!(
                "INSERT INTO \"{schema}\".violations (message_id, subscriber, worker) \
                 VALUES ($1, $2, $3)"
            ),
            schema: schema.to_owned(),
            slow: None,
        }
    }

    /// Each run takes `takes` (awaited inside the handler's transaction, like a call to
    /// another service), and is recorded in `runs` through `recorder` (a pool apart from
    /// the store's) when it enters and when it leaves.
    #[must_use]
    pub fn taking(mut self, takes: std::time::Duration, recorder: PgPool) -> Self {
        let schema = &self.schema;
        self.slow = Some(SlowRuns {
            pool: recorder,
            takes,
            enter: format!(
                "INSERT INTO \"{schema}\".runs (message_id, subscriber, worker) \
                 VALUES ($1, $2, $3) RETURNING id"
            ),
            exit: format!(
                "UPDATE \"{schema}\".runs SET exited_at = clock_timestamp() WHERE id = $1"
            ),
        });
        self
    }

    /// Records the entry of a run; returns its row id.
    async fn enter(
        &self,
        slow: &SlowRuns,
        id: uuid::Uuid,
        subscriber: &str,
    ) -> Result<i64, HandlerError> {
        sqlx::query_scalar(&slow.enter)
            .bind(id)
            .bind(subscriber)
            .bind(&self.worker)
            .fetch_one(&slow.pool)
            .await
            .map_err(|e| HandlerError::retriable(format!("could not record a run: {e}")))
    }

    /// Records the exit of run `run`.
    async fn exit(&self, slow: &SlowRuns, run: i64) -> Result<(), HandlerError> {
        sqlx::query(&slow.exit)
            .bind(run)
            .execute(&slow.pool)
            .await
            .map(|_| ())
            .map_err(|e| HandlerError::retriable(format!("could not record a run's end: {e}")))
    }
}

impl EffectWriter {
    /// Inserts the effect row of `(id, subscriber)` in the handler's transaction, or
    /// records a violation if it exists already.
    async fn apply(
        &self,
        ctx: &mut HandlerContext<'_, PgStore>,
        id: uuid::Uuid,
        key: &str,
        n: u64,
    ) -> Result<(), HandlerError> {
        if self.fail_rate > 0.0 && rand::random::<f64>() < self.fail_rate {
            return Err(HandlerError::retriable("injected failure (--fail-rate)"));
        }
        let subscriber = ctx.subscriber().to_owned();
        if let Some(slow) = &self.slow {
            let run = self.enter(slow, id, &subscriber).await?;
            tokio::time::sleep(slow.takes).await;
            self.exit(slow, run).await?;
        }
        let n = i64::try_from(n).map_err(HandlerError::permanent)?;
        let seq: Option<i64> = sqlx::query_scalar(&self.insert_effect)
            .bind(id)
            .bind(&subscriber)
            .bind(key)
            .bind(n)
            .bind(&self.worker)
            .fetch_optional(ctx.conn())
            .await?;
        if seq.is_none() {
            // Recorded outside the handler's transaction, so it stays whatever happens to
            // it. If it cannot be recorded, the attempt fails and the retry records it.
            sqlx::query(&self.insert_violation)
                .bind(id)
                .bind(&subscriber)
                .bind(&self.worker)
                .execute(&self.pool)
                .await
                .map_err(|e| {
                    HandlerError::retriable(format!("could not record a violation: {e}"))
                })?;
            eprintln!(
                "scale-worker {}: VIOLATION: message {id} applied again for {subscriber}",
                self.worker
            );
        }
        Ok(())
    }
}

impl EventHandler<PgStore, Tick> for EffectWriter {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, PgStore>,
        event: Event<Tick>,
    ) -> Result<(), HandlerError> {
        let key = event
            .partition_key
            .clone()
            .or_else(|| event.aggregate_id.clone())
            .unwrap_or_default();
        self.apply(ctx, event.id.0, &key, event.payload.n).await
    }
}

impl EventHandler<PgStore, Poison> for EffectWriter {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, PgStore>,
        event: Event<Poison>,
    ) -> Result<(), HandlerError> {
        Err(HandlerError::permanent(format!(
            "{POISON_REASON} (n = {})",
            event.payload.n
        )))
    }
}

impl CommandHandler<PgStore, Fulfil> for EffectWriter {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, PgStore>,
        command: Command<Fulfil>,
    ) -> Result<(), HandlerError> {
        let key = command.partition_key.clone().unwrap_or_default();
        self.apply(ctx, command.id.0, &key, command.payload.n).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_valid_and_applies_the_lease() {
        let config = worker_config(Duration::from_secs(5));
        assert!(config.validate().is_ok());
        assert_eq!(config.events_inbox.lock_at_most_for, Duration::from_secs(5));
        assert_eq!(
            config.events_outbox.lock_at_most_for,
            Duration::from_secs(5)
        );
        assert_eq!(config.events_inbox.max_retries, 1000);
        let short = worker_config(Duration::from_millis(500));
        assert!(
            short.validate().is_ok(),
            "lock-at-least-for follows a short lease"
        );
    }

    #[test]
    fn ddl_is_schema_qualified() {
        for ddl in tables_ddl("s1") {
            assert!(ddl.contains("\"s1\"."), "{ddl}");
        }
    }
}
