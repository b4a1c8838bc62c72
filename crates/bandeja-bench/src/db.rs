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
    /// The handler's write, inside its transaction: one row per event, one statement.
    async fn record_effects(
        &self,
        conn: &mut Self::Conn,
        rows: &[(Uuid, i64)],
    ) -> Result<(), sqlx::Error>;
    /// How many messages have been handled.
    async fn effects(&self) -> Result<i64, BoxError>;
    /// Every recorded latency, in microseconds.
    async fn latencies(&self) -> Result<Vec<i64>, BoxError>;
}

const CREATE: &str = "CREATE TABLE IF NOT EXISTS bench_effects \
     (message_id TEXT PRIMARY KEY, latency_us BIGINT NOT NULL)";

#[async_trait]
impl BenchDb for SqliteStore {
    async fn create_effects(&self) -> Result<(), BoxError> {
        sqlx::query(CREATE).execute(self.pool()).await?;
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

    async fn effects(&self) -> Result<i64, BoxError> {
        Ok(sqlx::query_scalar("SELECT count(*) FROM bench_effects")
            .fetch_one(self.pool())
            .await?)
    }

    async fn latencies(&self) -> Result<Vec<i64>, BoxError> {
        Ok(sqlx::query_scalar("SELECT latency_us FROM bench_effects")
            .fetch_all(self.pool())
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

    async fn effects(&self) -> Result<i64, BoxError> {
        let sql = format!("SELECT count(*) FROM {}.bench_effects", self.schema());
        Ok(sqlx::query_scalar(&sql).fetch_one(self.pool()).await?)
    }

    async fn latencies(&self) -> Result<Vec<i64>, BoxError> {
        let sql = format!("SELECT latency_us FROM {}.bench_effects", self.schema());
        Ok(sqlx::query_scalar(&sql).fetch_all(self.pool()).await?)
    }
}

/// The outbox handle of either store.
pub(crate) trait OutboxHandle: Store {
    /// The store's outbox.
    fn outbox_handle(&self) -> bandeja::Outbox<Self>;
}

impl<S: Store> OutboxHandle for S {
    fn outbox_handle(&self) -> bandeja::Outbox<Self> {
        bandeja::Outbox::new(self.clone())
    }
}
