//! The sagas' state on PostgreSQL (migration 0010): one row per saga, its state as JSONB,
//! the columns listings and the sweeper of late replies select on beside it. A saga is
//! moved under `SELECT … FOR UPDATE`, and written only over the version read.

use async_trait::async_trait;
use bandeja_core::saga::{SagaFilter, SagaId, SagaState};
use bandeja_core::sagas::SagaStore;
use bandeja_core::{StoreError, StoreErrorKind};
use chrono::{DateTime, Utc};
use sqlx::postgres::PgConnection;
use sqlx::types::Json;

use crate::{sqlx_error, PgStore};

/// The deadline column: set only while the saga still moves.
fn deadline(state: &SagaState) -> Option<DateTime<Utc>> {
    state.deadline.filter(|_| !state.status.is_final())
}

fn decoded(rows: Vec<Json<serde_json::Value>>) -> Result<Vec<SagaState>, StoreError> {
    rows.into_iter()
        .map(|Json(value)| {
            serde_json::from_value(value)
                .map_err(|e| StoreError::new(StoreErrorKind::Permanent, "decode a saga's state", e))
        })
        .collect()
}

#[async_trait]
impl SagaStore for PgStore {
    async fn insert_saga(
        &self,
        conn: &mut PgConnection,
        state: &SagaState,
    ) -> Result<(), StoreError> {
        let schema = self.schema();
        sqlx::query(&format!(
            "INSERT INTO \"{schema}\".sagas \
               (id, saga_type, status, deadline, created_at, updated_at, version, state) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(state.id.0)
        .bind(&state.saga_type)
        .bind(state.status.as_str())
        .bind(deadline(state))
        .bind(state.created_at)
        .bind(state.updated_at)
        .bind(state.version)
        .bind(Json(state))
        .execute(conn)
        .await
        .map_err(|e| sqlx_error("insert a saga", e))?;
        Ok(())
    }

    async fn lock_saga(
        &self,
        conn: &mut PgConnection,
        id: SagaId,
    ) -> Result<Option<SagaState>, StoreError> {
        let schema = self.schema();
        let row: Option<Json<serde_json::Value>> = sqlx::query_scalar(&format!(
            "SELECT state FROM \"{schema}\".sagas WHERE id = $1 FOR UPDATE"
        ))
        .bind(id.0)
        .fetch_optional(conn)
        .await
        .map_err(|e| sqlx_error("lock a saga", e))?;
        Ok(decoded(row.into_iter().collect())?.pop())
    }

    async fn update_saga(
        &self,
        conn: &mut PgConnection,
        state: &SagaState,
    ) -> Result<bool, StoreError> {
        let schema = self.schema();
        let done = sqlx::query(&format!(
            "UPDATE \"{schema}\".sagas \
             SET status = $2, deadline = $3, updated_at = $4, version = $5, state = $6 \
             WHERE id = $1 AND version = $5 - 1"
        ))
        .bind(state.id.0)
        .bind(state.status.as_str())
        .bind(deadline(state))
        .bind(state.updated_at)
        .bind(state.version)
        .bind(Json(state))
        .execute(conn)
        .await
        .map_err(|e| sqlx_error("update a saga", e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn late_sagas(
        &self,
        types: &[String],
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<SagaId>, StoreError> {
        let schema = self.schema();
        let ids: Vec<uuid::Uuid> = sqlx::query_scalar(&format!(
            "SELECT id FROM \"{schema}\".sagas WHERE deadline IS NOT NULL AND deadline <= $1 \
             AND saga_type = ANY($3) ORDER BY deadline LIMIT $2"
        ))
        .bind(now)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(types)
        .fetch_all(self.pool())
        .await
        .map_err(|e| sqlx_error("find late sagas", e))?;
        Ok(ids.into_iter().map(SagaId).collect())
    }

    async fn list_sagas(&self, filter: &SagaFilter) -> Result<Vec<SagaState>, StoreError> {
        let schema = self.schema();
        let rows: Vec<Json<serde_json::Value>> = sqlx::query_scalar(&format!(
            "SELECT state FROM \"{schema}\".sagas \
             WHERE ($1::text IS NULL OR saga_type = $1) AND ($2::text IS NULL OR status = $2) \
             ORDER BY created_at DESC, id DESC LIMIT $3"
        ))
        .bind(filter.saga_type.as_deref())
        .bind(filter.status.map(|s| s.as_str()))
        .bind(filter.effective_limit())
        .fetch_all(self.pool())
        .await
        .map_err(|e| sqlx_error("list sagas", e))?;
        decoded(rows)
    }

    async fn saga(&self, id: SagaId) -> Result<Option<SagaState>, StoreError> {
        let schema = self.schema();
        let row: Option<Json<serde_json::Value>> = sqlx::query_scalar(&format!(
            "SELECT state FROM \"{schema}\".sagas WHERE id = $1"
        ))
        .bind(id.0)
        .fetch_optional(self.pool())
        .await
        .map_err(|e| sqlx_error("read a saga", e))?;
        Ok(decoded(row.into_iter().collect())?.pop())
    }
}
