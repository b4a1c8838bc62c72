//! `GET /messages` (a filtered listing, newest first) and `GET /messages/{id}` (every row
//! of one message, with payload and headers).

use axum::extract::{Path, Query};
use axum::http::HeaderMap;
use axum::Json;
use bandeja_core::admin::{listing, Admin, AttemptView, MessageView};
use bandeja_core::Headers;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::auth;
use crate::error::ApiError;
use crate::filter::{self, Params, FILTER_KEYS};
use crate::router::Shared;

/// The query of a request, or a 400 saying why it cannot be read.
pub(crate) type RawQuery =
    Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>;

/// Unwraps a query string into its pairs.
pub(crate) fn pairs(query: RawQuery) -> Result<Vec<(String, String)>, ApiError> {
    query
        .map(|Query(pairs)| pairs)
        .map_err(|e| ApiError::BadRequest(e.body_text()))
}

/// One row as the endpoints show it.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    id: String,
    #[serde(rename = "box")]
    box_name: &'static str,
    subscriber: Option<String>,
    status: &'static str,
    #[serde(rename = "type")]
    message_type: String,
    schema_version: u32,
    tenant: String,
    partition_key: Option<String>,
    seq: i64,
    retry_count: u32,
    /// Lease takeovers, counted apart from the failed attempts in `retry_count`.
    takeovers: u32,
    delivery_count: u32,
    last_error: Option<String>,
    created_at: DateTime<Utc>,
    last_modified_at: DateTime<Utc>,
    next_attempt_at: Option<DateTime<Utc>>,
    completed_at: Option<DateTime<Utc>>,
    received_at: Option<DateTime<Utc>>,
    locked_by: Option<String>,
    locked_until: Option<DateTime<Utc>>,
    resubmitted_count: u32,
    resubmitted_at: Option<DateTime<Utc>>,
    headers: Headers,
    /// When the row was moved into its box's archive (`null`: it is in the box).
    archived_at: Option<DateTime<Utc>>,
    /// Who discarded it (a FAILED row given up on), when it was.
    discarded_by: Option<String>,
    /// Why it was discarded.
    discard_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<serde_json::Value>,
}

impl Row {
    /// The row of `view`; with its payload when `full`.
    pub(crate) fn new(view: MessageView, full: bool) -> Row {
        let message = view.row.message;
        let record = message.record;
        let payload = full.then(|| {
            serde_json::from_str(&record.payload)
                .unwrap_or_else(|_| serde_json::Value::String(record.payload.clone()))
        });
        Row {
            id: record.id.to_string(),
            box_name: message.box_kind.table(),
            subscriber: message.subscriber,
            status: message.status.as_str(),
            message_type: record.message_type,
            schema_version: record.schema_version,
            tenant: record.tenant_id.to_string(),
            partition_key: record.partition_key,
            seq: message.seq,
            retry_count: message.retry_count,
            takeovers: message.takeovers,
            delivery_count: message.delivery_count,
            last_error: message.last_error,
            created_at: view.row.created_at,
            last_modified_at: view.last_modified_at,
            next_attempt_at: view.row.next_attempt_at,
            completed_at: view.row.completed_at,
            received_at: view.received_at,
            locked_by: view.row.locked_by,
            locked_until: view.row.locked_until,
            resubmitted_count: view.resubmitted_count,
            resubmitted_at: view.resubmitted_at,
            headers: record.headers,
            archived_at: view.archived_at,
            discarded_by: view.discarded_by,
            discard_reason: view.discard_reason,
            payload,
        }
    }
}

/// The body of `GET /messages`.
#[derive(Debug, Serialize)]
pub(crate) struct Listing {
    /// Newest first, across every box the filter covers; exactly `limit` rows while more
    /// match.
    messages: Vec<Row>,
    /// How many rows match the filter, every page counted (`null` with `total=false`).
    total: Option<u64>,
    /// Pass as `cursor` for the next, older page (`null`: none).
    older: Option<String>,
    /// Pass as `cursor` for the previous, newer page (`null`: this is the first).
    newer: Option<String>,
}

/// `GET /messages?box=&status=&tenant=&type=&subscriber=&correlation_id=&since=&until=&id=&archived=&limit=&cursor=&total=`
/// (and `before=<seq>` with `box`).
pub(crate) async fn list<A: Admin>(
    state: Shared<A>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Json<Listing>, ApiError> {
    auth::allow_read(&state.options, &headers)?;
    let params = Params::new(
        pairs(query)?,
        &[FILTER_KEYS, &["limit", "before", "cursor", "total"]],
    )?;
    let filter = params.filter()?;
    let (limit, cursor) = params.page()?;
    // Counting reads every matching row (all of COMPLETED history, say): a client that
    // refreshes a page it already counted can skip it.
    let counted = params.get("total").is_none() || params.flag("total")?;
    let listed = listing::list_page(&state.admin, &filter, limit, cursor).await?;
    let total = match counted {
        true => Some(state.admin.count(&filter).await?),
        false => None,
    };
    Ok(Json(Listing {
        messages: listed
            .rows
            .into_iter()
            .map(|v| Row::new(v, false))
            .collect(),
        total,
        older: listed.older.map(|c| c.to_string()),
        newer: listed.newer.map(|c| c.to_string()),
    }))
}

/// The body of `GET /messages/{id}`.
#[derive(Debug, Serialize)]
pub(crate) struct Shown {
    id: String,
    /// The live rows, then the archived ones.
    rows: Vec<Row>,
    /// Every failed attempt kept for the message's rows, oldest first (at most
    /// [`MAX_ATTEMPTS_KEPT`](bandeja_core::admin::MAX_ATTEMPTS_KEPT) per row).
    attempts: Vec<AttemptView>,
}

/// `GET /messages/{id}`: the outbox row and every inbox row of the message, archived ones
/// included, and the attempts history.
pub(crate) async fn show<A: Admin>(
    state: Shared<A>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Shown>, ApiError> {
    auth::allow_read(&state.options, &headers)?;
    let id = filter::path_id(&id)?;
    let views = state.admin.show(id).await?;
    if views.is_empty() {
        return Err(ApiError::NotFound(format!("no message with id {id}")));
    }
    let attempts = state.admin.attempts(id).await?;
    Ok(Json(Shown {
        id: id.to_string(),
        rows: views.into_iter().map(|v| Row::new(v, true)).collect(),
        attempts,
    }))
}
