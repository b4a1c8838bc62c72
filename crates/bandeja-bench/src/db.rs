//! The benchmark's own table (`bench_effects`: one row per handled message, with its
//! commit→handled latency) on each store.

use async_trait::async_trait;
use bandeja::postgres::PgStore;
use bandeja::sqlite::SqliteStore;
use bandeja::store::Inspect;
use bandeja::Store;
use uuid::Uuid;

/// A boxed error for the benchmark's plumbing.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the benchmark needs from a store beyond bandeja's ports.
#[async_trait]
pub(crate) trait BenchDb: Store + Inspect {
    /// Creates `bench_effects` if missing.
    async fn create_effects(&self) -> Result<(), BoxError>;
    /// Empties `bench_effects`.
    async fn clear_effects(&self) -> Result<(), BoxError>;
    /// The handler's write, inside its transaction: one row per event, one statement.
    async fn record_effects(
        &self,
        conn: &mut Self::Conn,
        rows: &[(Uuid, i64)],
    ) -> Result<(), sqlx::Error>;
    /// How many messages have been handled.
    async fn effects(&self) -> Result<i64, BoxError>;
    /// Whether the event outbox or inbox still holds a PENDING or PROCESSING row.
    async fn live_rows_left(&self) -> Result<bool, BoxError>;
    /// Inserts `n` COMPLETED rows into `outbox_events` and `inbox_events`.
    async fn seed_history(&self, n: u64) -> Result<(), BoxError>;
    /// Every recorded latency, in microseconds.
    async fn latencies(&self) -> Result<Vec<i64>, BoxError>;
    /// What the drain left in the event inbox: rows with `retry_count > 0`, the highest
    /// `retry_count`, and FAILED rows.
    async fn inbox_retries(&self) -> Result<Retries, BoxError>;
}

/// What the drain left in the event inbox (see [`BenchDb::inbox_retries`]).
#[derive(Debug, Clone, Copy, Default, sqlx::FromRow)]
pub(crate) struct Retries {
    /// Rows with `retry_count > 0`.
    pub(crate) retried: i64,
    /// The highest `retry_count`.
    pub(crate) max_retry_count: i64,
    /// FAILED rows.
    pub(crate) failed: i64,
}

/// The statement of [`BenchDb::inbox_retries`] over `table`. The benchmark's own
/// subscriber only (history rows have another).
fn retries_sql(table: &str) -> String {
    format!(
        "SELECT CAST(count(*) FILTER (WHERE retry_count > 0) AS BIGINT) AS retried, \
           CAST(coalesce(max(retry_count), 0) AS BIGINT) AS max_retry_count, \
           CAST(count(*) FILTER (WHERE status = 'FAILED') AS BIGINT) AS failed \
         FROM {table} WHERE subscriber = 'bench'"
    )
}

/// A history id shaped like the UUID v7 bandeja writes: a millisecond timestamp (a day
/// before now, one per row) then random bits, so history sorts before new messages in
/// the primary key as it would in a real box.
const V7_LIKE_ID: &str =
    "(lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint - 86400000 + n), 12, '0') \
     || substr(md5(random()::text), 1, 20))::uuid";

/// Whether `outbox_events` or `inbox_events` (in `prefix`) has a live row: two probes of
/// the live partial indexes.
fn live_rows_sql(prefix: &str) -> String {
    let probe = |table: &str| {
        format!("EXISTS (SELECT 1 FROM {prefix}{table} WHERE status IN ('PENDING', 'PROCESSING'))")
    };
    format!(
        "SELECT {} OR {}",
        probe("outbox_events"),
        probe("inbox_events")
    )
}

/// The PostgreSQL probe of [`BenchDb::live_rows_left`] (`$1`, `$2`: the floors of the
/// outbox and the inbox): per box, the lowest live `seq` at or above its floor, or — none
/// being live — minus the next `seq` (every row below it is done for good in the
/// benchmark: new rows get higher numbers). Starting at the floor keeps the probe from
/// walking, every 10 ms, the partial index's entries of every row completed since the
/// start (not yet vacuumed away, they cost PostgreSQL ≈ 5 ms a probe late in a drain,
/// CPU taken from the drain it measures).
fn live_floor_sql(prefix: &str) -> String {
    let probe = |table: &str, floor: u8| {
        format!(
            "COALESCE((SELECT min(seq) FROM {prefix}{table} \
               WHERE status IN ('PENDING', 'PROCESSING') AND seq >= ${floor}), \
             -(SELECT COALESCE(max(seq), 0) + 1 FROM {prefix}{table}))"
        )
    };
    format!(
        "SELECT {}, {}",
        probe("outbox_events", 1),
        probe("inbox_events", 2)
    )
}

/// The floors of the PostgreSQL probe: outbox, inbox (one store per benchmark process).
static FLOORS: [std::sync::atomic::AtomicI64; 2] = [
    std::sync::atomic::AtomicI64::new(0),
    std::sync::atomic::AtomicI64::new(0),
];

const CREATE: &str = "CREATE TABLE IF NOT EXISTS bench_effects \
     (message_id TEXT PRIMARY KEY, latency_us BIGINT NOT NULL)";

#[async_trait]
impl BenchDb for SqliteStore {
    async fn create_effects(&self) -> Result<(), BoxError> {
        sqlx::query(CREATE).execute(self.pool()).await?;
        Ok(())
    }

    async fn clear_effects(&self) -> Result<(), BoxError> {
        sqlx::query("DELETE FROM bench_effects")
            .execute(self.pool())
            .await?;
        Ok(())
    }

    async fn record_effects(
        &self,
        conn: &mut Self::Conn,
        rows: &[(Uuid, i64)],
    ) -> Result<(), sqlx::Error> {
        let json: Vec<_> = rows
            .iter()
            .map(|(id, latency)| serde_json::json!([id.to_string(), latency]))
            .collect();
        sqlx::query(
            "INSERT INTO bench_effects (message_id, latency_us) \
             SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each($1)",
        )
        .bind(serde_json::Value::Array(json).to_string())
        .execute(conn)
        .await?;
        Ok(())
    }

    async fn seed_history(&self, n: u64) -> Result<(), BoxError> {
        for table in ["outbox_events", "inbox_events"] {
            let subscriber = if table == "inbox_events" {
                ", subscriber, received_at"
            } else {
                ""
            };
            let subscriber_value = if table == "inbox_events" {
                ", 'old', 'x'"
            } else {
                ""
            };
            let sql = format!(
                "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < $1) \
                 INSERT INTO {table} (id, tenant_id, message_type, schema_version, partition_key, payload, \
                   headers, status, next_attempt_at, occurred_at, created_at, last_modified_at, completed_at{subscriber}) \
                 SELECT 'history-' || n, 'default', 'bench.Old', 1, 'old-' || (n % 1000), '{{}}', '{{}}', \
                   'COMPLETED', 'x', 'x', 'x', 'x', 'x'{subscriber_value} FROM c"
            );
            sqlx::query(&sql)
                .bind(i64::try_from(n)?)
                .execute(self.pool())
                .await?;
        }
        Ok(())
    }

    async fn effects(&self) -> Result<i64, BoxError> {
        Ok(sqlx::query_scalar("SELECT count(*) FROM bench_effects")
            .fetch_one(self.pool())
            .await?)
    }

    async fn live_rows_left(&self) -> Result<bool, BoxError> {
        Ok(sqlx::query_scalar(&live_rows_sql(""))
            .fetch_one(self.pool())
            .await?)
    }

    async fn latencies(&self) -> Result<Vec<i64>, BoxError> {
        Ok(sqlx::query_scalar("SELECT latency_us FROM bench_effects")
            .fetch_all(self.pool())
            .await?)
    }

    async fn inbox_retries(&self) -> Result<Retries, BoxError> {
        Ok(sqlx::query_as(&retries_sql("inbox_events"))
            .fetch_one(self.pool())
            .await?)
    }
}

#[async_trait]
impl BenchDb for PgStore {
    async fn create_effects(&self) -> Result<(), BoxError> {
        let sql = CREATE.replace("bench_effects", &format!("{}.bench_effects", self.schema()));
        sqlx::query(&sql).execute(self.pool()).await?;
        Ok(())
    }

    async fn clear_effects(&self) -> Result<(), BoxError> {
        let sql = format!("TRUNCATE {}.bench_effects", self.schema());
        sqlx::query(&sql).execute(self.pool()).await?;
        Ok(())
    }

    async fn record_effects(
        &self,
        conn: &mut Self::Conn,
        rows: &[(Uuid, i64)],
    ) -> Result<(), sqlx::Error> {
        let sql = format!(
            "INSERT INTO {}.bench_effects (message_id, latency_us) \
             SELECT * FROM UNNEST($1::text[], $2::bigint[])",
            self.schema()
        );
        let ids: Vec<String> = rows.iter().map(|(id, _)| id.to_string()).collect();
        let latencies: Vec<i64> = rows.iter().map(|(_, latency)| *latency).collect();
        sqlx::query(&sql)
            .bind(ids)
            .bind(latencies)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn seed_history(&self, n: u64) -> Result<(), BoxError> {
        for table in ["outbox_events", "inbox_events"] {
            let (subscriber, subscriber_value) = if table == "inbox_events" {
                (", subscriber, received_at", ", 'old', now()")
            } else {
                ("", "")
            };
            let sql = format!(
                "INSERT INTO {schema}.{table} (id, tenant_id, message_type, schema_version, partition_key, \
                   payload, headers, status, next_attempt_at, occurred_at, created_at, last_modified_at, \
                   completed_at{subscriber}) \
                 SELECT {V7_LIKE_ID}, 'default', 'bench.Old', 1, 'old-' || (n % 1000), '{{}}', '{{}}', \
                   'COMPLETED', now(), now(), now(), now(), now(){subscriber_value} \
                 FROM generate_series(1, $1) AS n",
                schema = self.schema(),
                V7_LIKE_ID = V7_LIKE_ID
            );
            sqlx::query(&sql)
                .bind(i64::try_from(n)?)
                .execute(self.pool())
                .await?;
            sqlx::query(&format!("VACUUM ANALYZE {}.{table}", self.schema()))
                .execute(self.pool())
                .await?;
        }
        // Seeding wrote gigabytes of WAL: flush it now, so the checkpoint it calls for does
        // not run during (and bill) the measurement. A box that grew its history over time
        // has been checkpointed many times over.
        sqlx::query("CHECKPOINT").execute(self.pool()).await?;
        Ok(())
    }

    async fn effects(&self) -> Result<i64, BoxError> {
        let sql = format!("SELECT count(*) FROM {}.bench_effects", self.schema());
        Ok(sqlx::query_scalar(&sql).fetch_one(self.pool()).await?)
    }

    async fn live_rows_left(&self) -> Result<bool, BoxError> {
        use std::sync::atomic::Ordering;
        let sql = live_floor_sql(&format!("{}.", self.schema()));
        let (outbox, inbox): (i64, i64) = sqlx::query_as(&sql)
            .bind(FLOORS[0].load(Ordering::Relaxed))
            .bind(FLOORS[1].load(Ordering::Relaxed))
            .fetch_one(self.pool())
            .await?;
        for (floor, found) in FLOORS.iter().zip([outbox, inbox]) {
            floor.store(found.abs(), Ordering::Relaxed);
        }
        Ok(outbox > 0 || inbox > 0)
    }

    async fn latencies(&self) -> Result<Vec<i64>, BoxError> {
        let sql = format!("SELECT latency_us FROM {}.bench_effects", self.schema());
        Ok(sqlx::query_scalar(&sql).fetch_all(self.pool()).await?)
    }

    async fn inbox_retries(&self) -> Result<Retries, BoxError> {
        let sql = retries_sql(&format!("{}.inbox_events", self.schema()));
        Ok(sqlx::query_as(&sql).fetch_one(self.pool()).await?)
    }
}
