//! The sagas' state on SQLite (migration 0010): one row per saga, its state as JSON, the
//! columns listings and the sweeper of late replies select on beside it.

use async_trait::async_trait;
use bandeja_core::saga::{SagaFilter, SagaId, SagaState};
use bandeja_core::sagas::SagaStore;
use bandeja_core::{StoreError, StoreErrorKind};
use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::sqlite::SqliteConnection;

use crate::{sqlx_error, SqliteStore};

/// A time as the boxes store them (ISO-8601 UTC text, milliseconds), so text order is
/// time order.
fn text(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn encode(state: &SagaState) -> Result<String, StoreError> {
    serde_json::to_string(state)
        .map_err(|e| StoreError::new(StoreErrorKind::Permanent, "encode a saga's state", e))
}

fn decode(json: &str) -> Result<SagaState, StoreError> {
    serde_json::from_str(json)
        .map_err(|e| StoreError::new(StoreErrorKind::Permanent, "decode a saga's state", e))
}

/// The deadline column: set only while the saga still moves.
fn deadline(state: &SagaState) -> Option<String> {
    state
        .deadline
        .filter(|_| !state.status.is_final())
        .map(text)
}

#[async_trait]
impl SagaStore for SqliteStore {
    async fn insert_saga(
        &self,
        conn: &mut SqliteConnection,
        state: &SagaState,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO sagas (id, saga_type, status, deadline, created_at, updated_at, version, state) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .bind(state.id.to_string())
        .bind(&state.saga_type)
        .bind(state.status.as_str())
        .bind(deadline(state))
        .bind(text(state.created_at))
        .bind(text(state.updated_at))
        .bind(state.version)
        .bind(encode(state)?)
        .execute(conn)
        .await
        .map_err(|e| sqlx_error("insert a saga", e))?;
        Ok(())
    }

    async fn lock_saga(
        &self,
        conn: &mut SqliteConnection,
        id: SagaId,
    ) -> Result<Option<SagaState>, StoreError> {
        // A write first: it takes SQLite's write lock (waiting for it in the busy handler)
        // before anything is read. A plain read first would make the caller's write an
        // upgrade of a read transaction, which SQLite refuses at once ("database is locked",
        // no wait) whenever another connection holds the lock: under a drain, nearly every
        // reply's move failed and was retried. `update_saga` still writes only over the
        // version read.
        let json: Option<String> =
            sqlx::query_scalar("UPDATE sagas SET version = version WHERE id = ?1 RETURNING state")
                .bind(id.to_string())
                .fetch_optional(conn)
                .await
                .map_err(|e| sqlx_error("lock and read a saga", e))?;
        json.as_deref().map(decode).transpose()
    }

    async fn update_saga(
        &self,
        conn: &mut SqliteConnection,
        state: &SagaState,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE sagas SET status = ?2, deadline = ?3, updated_at = ?4, version = ?5, state = ?6 \
             WHERE id = ?1 AND version = ?5 - 1",
        )
        .bind(state.id.to_string())
        .bind(state.status.as_str())
        .bind(deadline(state))
        .bind(text(state.updated_at))
        .bind(state.version)
        .bind(encode(state)?)
        .execute(conn)
        .await
        .map_err(|e| sqlx_error("update a saga", e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn begin_move(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StoreError> {
        self.begin_immediate()
            .await
            .map_err(|e| sqlx_error("begin a saga's move", e))
    }

    async fn late_sagas(
        &self,
        types: &[String],
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<SagaId>, StoreError> {
        let types = serde_json::to_string(types)
            .map_err(|e| StoreError::new(StoreErrorKind::Permanent, "encode saga types", e))?;
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM sagas WHERE deadline IS NOT NULL AND deadline <= ?1 \
             AND saga_type IN (SELECT value FROM json_each(?3)) \
             ORDER BY deadline LIMIT ?2",
        )
        .bind(text(now))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(types)
        .fetch_all(self.workers())
        .await
        .map_err(|e| sqlx_error("find late sagas", e))?;
        Ok(ids.iter().filter_map(|id| id.parse().ok()).collect())
    }

    async fn list_sagas(&self, filter: &SagaFilter) -> Result<Vec<SagaState>, StoreError> {
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT state FROM sagas \
             WHERE (?1 IS NULL OR saga_type = ?1) AND (?2 IS NULL OR status = ?2) \
             ORDER BY created_at DESC, id DESC LIMIT ?3",
        )
        .bind(filter.saga_type.as_deref())
        .bind(filter.status.map(|s| s.as_str()))
        .bind(filter.effective_limit())
        .fetch_all(self.workers())
        .await
        .map_err(|e| sqlx_error("list sagas", e))?;
        rows.iter().map(|json| decode(json)).collect()
    }

    async fn saga(&self, id: SagaId) -> Result<Option<SagaState>, StoreError> {
        let json: Option<String> = sqlx::query_scalar("SELECT state FROM sagas WHERE id = ?1")
            .bind(id.to_string())
            .fetch_optional(self.workers())
            .await
            .map_err(|e| sqlx_error("read a saga", e))?;
        json.as_deref().map(decode).transpose()
    }
}
