//! Rows → [`StoredMessage`] / [`RowView`], and the text form of times.

use bandeja_core::store::RowView;
use bandeja_core::{
    BoxKind, Headers, MessageId, MessageKind, MessageRecord, StoreError, StoreErrorKind,
    StoredMessage, TenantId,
};
use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

/// A row that cannot be decoded: a permanent store error.
pub(crate) fn bad(what: impl Into<bandeja_core::BoxError>) -> StoreError {
    StoreError::new(StoreErrorKind::Permanent, "decode a row", what)
}

/// UTC text with microseconds, fixed width.
pub(crate) fn format_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Parses a time column's text.
pub(crate) fn parse_time(text: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| bad(format!("bad time `{text}`: {e}")))
}

/// A nullable time column.
pub(crate) fn opt_time(row: &SqliteRow, column: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
    let text: Option<String> = row.try_get(column).map_err(bad)?;
    text.as_deref().map(parse_time).transpose()
}

fn tenant(text: Option<String>) -> Result<Option<TenantId>, StoreError> {
    text.map(|t| TenantId::new(t).map_err(bad)).transpose()
}

fn u32_of(row: &SqliteRow, column: &str) -> Result<u32, StoreError> {
    let value: i64 = row.try_get(column).map_err(bad)?;
    u32::try_from(value).map_err(|_| bad(format!("{column} out of range: {value}")))
}

/// What a claim needs of a row it could not decode to mark it FAILED: its id, subscriber
/// and retry count.
pub(crate) fn row_key(row: &SqliteRow) -> Result<bandeja_core::store::RowKey, StoreError> {
    let id: String = row.try_get("id").map_err(bad)?;
    Ok(bandeja_core::store::RowKey {
        id: id.parse::<MessageId>().map_err(bad)?,
        subscriber: row.try_get("subscriber").map_err(bad)?,
        retry_count: u32_of(row, "retry_count")?,
    })
}

/// Decodes a row selected with the box's column list.
pub(crate) fn row_view(row: &SqliteRow, box_kind: BoxKind) -> Result<RowView, StoreError> {
    let id: String = row.try_get("id").map_err(bad)?;
    let headers: String = row.try_get("headers").map_err(bad)?;
    let status: String = row.try_get("status").map_err(bad)?;
    let occurred: String = row.try_get("occurred_at").map_err(bad)?;
    let created: String = row.try_get("created_at").map_err(bad)?;
    let tenant_id: String = row.try_get("tenant_id").map_err(bad)?;
    let record = MessageRecord {
        id: id.parse::<MessageId>().map_err(bad)?,
        kind: box_kind.kind(),
        tenant_id: TenantId::new(tenant_id).map_err(bad)?,
        message_type: row.try_get("message_type").map_err(bad)?,
        schema_version: u32_of(row, "schema_version")?,
        partition_key: row.try_get("partition_key").map_err(bad)?,
        aggregate_type: row.try_get("aggregate_type").map_err(bad)?,
        aggregate_id: row.try_get("aggregate_id").map_err(bad)?,
        payload: row.try_get("payload").map_err(bad)?,
        headers: serde_json::from_str::<Headers>(&headers).map_err(bad)?,
        source_tenant_id: tenant(row.try_get("source_tenant_id").map_err(bad)?)?,
        target_tenant_id: tenant(row.try_get("target_tenant_id").map_err(bad)?)?,
        target_service: row.try_get("target_service").map_err(bad)?,
        occurred_at: parse_time(&occurred)?,
    };
    debug_assert!(record.kind == MessageKind::Event || record.kind == MessageKind::Command);
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
        taken_over_from: None,
    };
    Ok(RowView {
        message,
        locked_by: row.try_get("locked_by").map_err(bad)?,
        locked_until: opt_time(row, "locked_until")?,
        next_attempt_at: opt_time(row, "next_attempt_at")?,
        created_at: parse_time(&created)?,
        completed_at: opt_time(row, "completed_at")?,
    })
}
