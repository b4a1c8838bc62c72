//! Shared by the scale tests: a fresh schema per test (migrated, with the effect tables),
//! dropped by a guard even when the test fails; emission in batches; `scale-worker` child
//! processes killed when dropped; small queries.
//!
//! Uses `DATABASE_URL`, or `postgres://postgres@127.0.0.1:5432/test`. When PostgreSQL is
//! unreachable the tests fail if `CI=true`, and are skipped (after a notice) otherwise.

// Each test crate uses a part of this module.
#![allow(dead_code)]

pub(crate) mod chaos;
pub(crate) mod fleet;
pub(crate) mod kafka_mock;
pub(crate) mod pair;
pub(crate) mod shared;
mod worker;

use std::time::{Duration, Instant};

use bandeja::postgres::PgStore;
use bandeja::testing::eventually;
use bandeja::{Event, MessageRecord, Store};
use bandeja_conformance::fixtures::outbox_of;
use bandeja_scale_tests::Tick;
use sqlx::PgPool;

#[allow(unused_imports)] // not every test crate starts worker processes
pub(crate) use worker::{run_until_crash, terminate_all, Worker};

pub(crate) use bandeja_postgres::testing::{database_url, SchemaGuard};

/// Shortest pause between two counts of [`Fresh::wait_count`].
const COUNT_EVERY: Duration = Duration::from_millis(200);

/// Emission batch: events per transaction.
pub(crate) const EMIT_BATCH: usize = 1_000;

/// A test's database: the store (for emission and inspection) in a fresh schema.
pub(crate) struct Fresh {
    /// The store on the test's schema.
    pub(crate) store: PgStore,
    /// Drops the schema. Declared after `store`, so the store's pool closes first.
    pub(crate) guard: SchemaGuard,
}

impl Fresh {
    /// The test's schema.
    pub(crate) fn schema(&self) -> &str {
        self.guard.schema()
    }

    /// The store's pool.
    pub(crate) fn pool(&self) -> &PgPool {
        self.store.pool()
    }

    /// `template` with every `{s}` replaced by the quoted schema name.
    pub(crate) fn sql(&self, template: &str) -> String {
        template.replace("{s}", &format!("\"{}\"", self.schema()))
    }

    /// The single value of the query `template` (see [`Fresh::sql`]).
    pub(crate) async fn scalar<T>(&self, template: &str) -> T
    where
        T: Send + Unpin + for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    {
        let sql = self.sql(template);
        sqlx::query_scalar(&sql)
            .fetch_one(self.pool())
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// `SELECT count(*) FROM {s}.<from_where>` (`from_where` may use `{s}` too).
    pub(crate) async fn count(&self, from_where: &str) -> i64 {
        self.scalar(&format!("SELECT count(*) FROM {{s}}.{from_where}"))
            .await
    }

    /// Waits (never longer than `timeout`) until `from_where` counts at least `target`
    /// rows; panics with the last count and the boxes' status counts otherwise.
    /// The count runs at most every [`COUNT_EVERY`], so that watching does not load the
    /// machine the workers share.
    pub(crate) async fn wait_count(&self, from_where: &str, target: i64, timeout: Duration) {
        let mut last: Option<Instant> = None;
        let reached = eventually(timeout, || {
            let due = match last {
                Some(at) => at.elapsed() >= COUNT_EVERY,
                None => true,
            };
            if due {
                last = Some(Instant::now());
            }
            async move {
                if !due {
                    return None;
                }
                (self.count(from_where).await >= target).then_some(())
            }
        })
        .await;
        if let Err(error) = reached {
            let last = self.count(from_where).await;
            panic!(
                "{from_where}: {last} rows, expected {target} ({error}); boxes: {}",
                self.status_summary().await
            );
        }
    }

    /// Waits until no connection of `application_name` is left: whatever the process
    /// that owned them sent has been committed or rolled back.
    pub(crate) async fn wait_disconnected(&self, application_name: &str) {
        eventually(Duration::from_secs(30), || async {
            let left: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            )
            .bind(application_name)
            .fetch_one(self.pool())
            .await
            .expect("pg_stat_activity");
            (left == 0).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("connections of {application_name} still open: {e}"));
    }

    /// Status counts of both event boxes, for failure messages.
    pub(crate) async fn status_summary(&self) -> String {
        let sql = self.sql(
            "SELECT 'outbox ' || status || '=' || count(*) FROM {s}.outbox_events GROUP BY status \
             UNION ALL SELECT 'inbox ' || status || '=' || count(*) FROM {s}.inbox_events GROUP BY status",
        );
        let parts: Vec<String> = sqlx::query_scalar(&sql)
            .fetch_all(self.pool())
            .await
            .unwrap_or_default();
        parts.join(", ")
    }

    /// Emits one [`Tick`] per `(key, n)`, [`EMIT_BATCH`] per transaction, through the
    /// outbox API an application uses.
    pub(crate) async fn emit(&self, ticks: &[(String, u64)]) {
        let outbox = outbox_of(&self.store);
        for batch in ticks.chunks(EMIT_BATCH) {
            let records: Vec<MessageRecord> = batch
                .iter()
                .map(|(key, n)| {
                    MessageRecord::from_event(&Event::new("Scale", key.clone(), Tick { n: *n }))
                        .expect("valid event")
                })
                .collect();
            let mut tx = self.store.begin().await.expect("begin");
            outbox.emit_records(&mut *tx, records).await.expect("emit");
            self.store.commit(tx).await.expect("commit");
        }
    }
}

/// A fresh schema `scale_<random hex>`, migrated, with the effect tables; `None` (after a
/// notice) when PostgreSQL is unreachable outside CI. Panics in CI.
pub(crate) async fn try_fresh() -> Option<Fresh> {
    let guard = bandeja_postgres::testing::fresh_schema("scale").await?;
    let (url, schema) = (database_url(), guard.schema().to_owned());
    let store = PgStore::connect_with_schema(&url, &schema)
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    bandeja_scale_tests::create_tables(store.pool(), &schema)
        .await
        .expect("create the effect tables");
    Some(Fresh { store, guard })
}
