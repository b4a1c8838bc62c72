//! The JSON form of a row (`messages list --json`, `messages show --json`).

use bandeja_core::admin::MessageView;
use bandeja_core::{BoxKind, Headers, MessageId, MessageStatus, TenantId};
use chrono::{DateTime, Utc};
use serde::Serialize;

/// One row of one box, as the CLI prints it in JSON.
#[derive(Debug, Serialize)]
pub(crate) struct RowJson<'a> {
    /// The box.
    #[serde(rename = "box")]
    box_kind: BoxKind,
    /// Message id.
    id: MessageId,
    /// Insertion order in the box.
    seq: i64,
    /// Subscriber (inbox rows).
    subscriber: Option<&'a str>,
    /// Status.
    status: MessageStatus,
    /// Tenant.
    tenant: &'a TenantId,
    /// Message type.
    message_type: &'a str,
    /// Payload schema version.
    schema_version: u32,
    /// Ordering key.
    partition_key: Option<&'a str>,
    /// Aggregate type (events).
    aggregate_type: Option<&'a str>,
    /// Aggregate id (events).
    aggregate_id: Option<&'a str>,
    /// Source tenant (commands).
    source_tenant: Option<&'a TenantId>,
    /// Target tenant (commands).
    target_tenant: Option<&'a TenantId>,
    /// Target service (commands).
    target_service: Option<&'a str>,
    /// Failed attempts so far.
    retry_count: u32,
    /// Lease takeovers so far: how many times a worker took the row over because the worker
    /// holding it had stopped (not failed attempts).
    takeovers: u32,
    /// Deliveries by the transport (inbox rows).
    delivery_count: u32,
    /// The last failure.
    last_error: Option<&'a str>,
    /// When the message was created.
    occurred_at: DateTime<Utc>,
    /// When the row was inserted.
    created_at: DateTime<Utc>,
    /// When a PENDING row is due.
    next_attempt_at: Option<DateTime<Utc>>,
    /// When the row became COMPLETED.
    completed_at: Option<DateTime<Utc>>,
    /// When the row last changed.
    last_modified_at: DateTime<Utc>,
    /// When an inbox row was first received.
    received_at: Option<DateTime<Utc>>,
    /// Operator resubmissions (retry, replay).
    resubmitted_count: u32,
    /// The last resubmission.
    resubmitted_at: Option<DateTime<Utc>>,
    /// Who holds the claim.
    locked_by: Option<&'a str>,
    /// Until when.
    locked_until: Option<DateTime<Utc>>,
    /// When the row was moved into its box's archive table (`null`: it is in its box).
    archived_at: Option<DateTime<Utc>>,
    /// Who discarded it (a discarded FAILED row in the archive).
    discarded_by: Option<&'a str>,
    /// Why.
    discard_reason: Option<&'a str>,
    /// Headers (`messages show` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    headers: Option<&'a Headers>,
    /// The payload (`messages show` only): its JSON, or its text if it is not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<serde_json::Value>,
}

impl<'a> RowJson<'a> {
    /// The JSON form of `row`; with `full`, headers and payload too.
    pub(crate) fn new(row: &'a MessageView, full: bool) -> RowJson<'a> {
        let m = &row.message;
        let r = &m.record;
        RowJson {
            box_kind: m.box_kind,
            id: r.id,
            seq: m.seq,
            subscriber: m.subscriber.as_deref(),
            status: m.status,
            tenant: &r.tenant_id,
            message_type: &r.message_type,
            schema_version: r.schema_version,
            partition_key: r.partition_key.as_deref(),
            aggregate_type: r.aggregate_type.as_deref(),
            aggregate_id: r.aggregate_id.as_deref(),
            source_tenant: r.source_tenant_id.as_ref(),
            target_tenant: r.target_tenant_id.as_ref(),
            target_service: r.target_service.as_deref(),
            retry_count: m.retry_count,
            takeovers: m.takeovers,
            delivery_count: m.delivery_count,
            last_error: m.last_error.as_deref(),
            occurred_at: r.occurred_at,
            created_at: row.created_at,
            next_attempt_at: row.next_attempt_at,
            completed_at: row.completed_at,
            last_modified_at: row.last_modified_at,
            received_at: row.received_at,
            resubmitted_count: row.resubmitted_count,
            resubmitted_at: row.resubmitted_at,
            locked_by: row.locked_by.as_deref(),
            locked_until: row.locked_until,
            archived_at: row.archived_at,
            discarded_by: row.discarded_by.as_deref(),
            discard_reason: row.discard_reason.as_deref(),
            headers: full.then_some(&r.headers),
            payload: full.then(|| payload_value(&r.payload)),
        }
    }
}

/// The payload's JSON value, or the text itself when it does not parse.
pub(crate) fn payload_value(payload: &str) -> serde_json::Value {
    serde_json::from_str(payload).unwrap_or_else(|_| serde_json::Value::String(payload.to_owned()))
}
