//! Rows → [`StoredMessage`] / [`RowView`].
//!
//! `payload` and `headers` are JSONB: the payload comes back as compact JSON text that is
//! equivalent to, but not necessarily byte-identical with, the text that was written
//! (JSONB normalizes whitespace and key order).

use bandeja_core::store::RowView;
use bandeja_core::{
    BoxKind, Headers, MessageId, MessageRecord, StoreError, StoreErrorKind, StoredMessage, TenantId,
};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::Row;
use uuid::Uuid;

fn bad(what: impl Into<bandeja_core::BoxError>) -> StoreError {
    StoreError::new(StoreErrorKind::Permanent, "decode a row", what)
}

fn tenant(text: Option<String>) -> Result<Option<TenantId>, StoreError> {
    text.map(|t| TenantId::new(t).map_err(bad)).transpose()
}

fn u32_of(row: &PgRow, column: &str) -> Result<u32, StoreError> {
    let value: i32 = row.try_get(column).map_err(bad)?;
    u32::try_from(value).map_err(|_| bad(format!("{column} out of range: {value}")))
}

/// What a claim needs of a row it could not decode to mark it FAILED: its id, subscriber
/// and retry count.
pub(crate) fn row_key(row: &PgRow) -> Result<bandeja_core::store::RowKey, StoreError> {
    let id: Uuid = row.try_get("id").map_err(bad)?;
    Ok(bandeja_core::store::RowKey {
        id: MessageId(id),
        subscriber: row.try_get("subscriber").map_err(bad)?,
        retry_count: u32_of(row, "retry_count")?,
    })
}

/// Decodes a row selected with the box's column list (`taken_over_from` included).
pub(crate) fn row_view(row: &PgRow, box_kind: BoxKind) -> Result<RowView, StoreError> {
    let id: Uuid = row.try_get("id").map_err(bad)?;
    let payload: serde_json::Value = row.try_get("payload").map_err(bad)?;
    let Json(headers): Json<Headers> = row.try_get("headers").map_err(bad)?;
    let status: String = row.try_get("status").map_err(bad)?;
    let tenant_id: String = row.try_get("tenant_id").map_err(bad)?;
    let record = MessageRecord {
        id: MessageId(id),
        kind: box_kind.kind(),
        tenant_id: TenantId::new(tenant_id).map_err(bad)?,
        message_type: row.try_get("message_type").map_err(bad)?,
        schema_version: u32_of(row, "schema_version")?,
        partition_key: row.try_get("partition_key").map_err(bad)?,
        aggregate_type: row.try_get("aggregate_type").map_err(bad)?,
        aggregate_id: row.try_get("aggregate_id").map_err(bad)?,
        payload: payload.to_string(),
        headers,
        source_tenant_id: tenant(row.try_get("source_tenant_id").map_err(bad)?)?,
        target_tenant_id: tenant(row.try_get("target_tenant_id").map_err(bad)?)?,
        target_service: row.try_get("target_service").map_err(bad)?,
        occurred_at: row.try_get("occurred_at").map_err(bad)?,
    };
    let message = StoredMessage {
        record,
        box_kind,
        seq: row.try_get("seq").map_err(bad)?,
        subscriber: row.try_get("subscriber").map_err(bad)?,
        status: status.parse().map_err(bad)?,
        retry_count: u32_of(row, "retry_count")?,
        last_error: row.try_get("last_error").map_err(bad)?,
        delivery_count: u32_of(row, "delivery_count")?,
        takeovers: u32_of(row, "takeover_count")?,
        taken_over_from: row.try_get("taken_over_from").map_err(bad)?,
    };
    Ok(RowView {
        message,
        locked_by: row.try_get("locked_by").map_err(bad)?,
        locked_until: row.try_get("locked_until").map_err(bad)?,
        next_attempt_at: row.try_get("next_attempt_at").map_err(bad)?,
        created_at: row.try_get("created_at").map_err(bad)?,
        completed_at: row.try_get("completed_at").map_err(bad)?,
    })
}
