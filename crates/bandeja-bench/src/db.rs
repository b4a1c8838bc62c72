//! The benchmark's own table (`bench_effects`: one row per handled message and subscriber,
//! with its commit→handled latency) on each store.

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
    /// The handler's write, inside its transaction.
    async fn record_effect(
        &self,
        conn: &mut Self::Conn,
        id: Uuid,
        latency_us: i64,
    ) -> Result<(), sqlx::Error>;
    /// How many messages have been handled.
    async fn effects(&self) -> Result<i64, BoxError>;
    /// Every recorded latency, in microseconds.
    async fn latencies(&self) -> Result<Vec<i64>, BoxError>;
}

const CREATE: &str = "CREATE TABLE IF NOT EXISTS bench_effects (message_id TEXT PRIMARY KEY, latency_us BIGINT NOT NULL)";

#[async_trait]
impl BenchDb for SqliteStore {
    async fn create_effects(&self) -> Result<(), BoxError> {
        sqlx::query(CREATE).execute(self.pool()).await?;
        Ok(())
    }

    async fn record_effect(
        &self,
        conn: &mut Self::Conn,
        id: Uuid,
        latency_us: i64,
    ) -> Result<(), sqlx::Error> {
        sqlx::query("INSERT INTO bench_effects (message_id, latency_us) VALUES ($1, $2)")
            .bind(id.to_string())
            .bind(latency_us)
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
        sqlx::query(&CREATE.replace("bench_effects", &format!("{}.bench_effects", self.schema())))
            .execute(self.pool())
            .await?;
        Ok(())
    }

    async fn record_effect(
        &self,
        conn: &mut Self::Conn,
        id: Uuid,
        latency_us: i64,
    ) -> Result<(), sqlx::Error> {
        let sql = format!(
            "INSERT INTO {}.bench_effects (message_id, latency_us) VALUES ($1, $2)",
            self.schema()
        );
        sqlx::query(&sql)
            .bind(id.to_string())
            .bind(latency_us)
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
