//! bandeja's own wire format, version 1: what streams and queues written before the
//! CloudEvents envelope still hold. Read, and written only by [`super::encode_legacy`]
//! (for tests and for a fleet whose consumers are older than the envelope).
//!
//! ```json
//! {"bandeja":1,"id":"0190…","kind":"event","type":"shop.OrderPlaced","schema_version":1,
//!  "tenant_id":"acme","partition_key":"o-1","aggregate_type":"Order","aggregate_id":"o-1",
//!  "payload":{…},"headers":{"correlation_id":"…","traceparent":"00-…","source_service":"order"},
//!  "occurred_at":"2026-11-30T12:00:00.000001Z"}
//! ```
//!
//! Commands add `source_tenant_id`, `target_tenant_id` and `target_service`.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{WireError, WireKind};
use crate::envelope::{Headers, MessageId};
use crate::error::MessageError;
use crate::record::{MessageKind, MessageRecord};
use crate::tenant::TenantId;

/// The version of this format.
pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    bandeja: u32,
    id: MessageId,
    kind: WireKind,
    #[serde(rename = "type", borrow)]
    message_type: Cow<'a, str>,
    schema_version: u32,
    tenant_id: TenantId,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    partition_key: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    aggregate_type: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    aggregate_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    payload: Cow<'a, RawValue>,
    #[serde(default)]
    headers: Cow<'a, Headers>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source_tenant_id: Option<TenantId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target_tenant_id: Option<TenantId>,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    target_service: Option<Cow<'a, str>>,
    occurred_at: DateTime<Utc>,
}

/// Encodes a record in this format, with `headers` (the record's, the source service
/// filled in) and `payload` (the row's JSON).
pub(super) fn encode(
    record: &MessageRecord,
    headers: Cow<'_, Headers>,
    payload: Cow<'_, RawValue>,
) -> Vec<u8> {
    let wire = Wire {
        bandeja: VERSION,
        id: record.id,
        kind: WireKind::of(record.kind),
        message_type: Cow::Borrowed(&record.message_type),
        schema_version: record.schema_version,
        tenant_id: record.tenant_id.clone(),
        partition_key: record.partition_key.as_deref().map(Cow::Borrowed),
        aggregate_type: record.aggregate_type.as_deref().map(Cow::Borrowed),
        aggregate_id: record.aggregate_id.as_deref().map(Cow::Borrowed),
        payload,
        headers,
        source_tenant_id: record.source_tenant_id.clone(),
        target_tenant_id: record.target_tenant_id.clone(),
        target_service: record.target_service.as_deref().map(Cow::Borrowed),
        occurred_at: record.occurred_at,
    };
    // Serializing this struct cannot fail: every field is a string, number or map of strings.
    serde_json::to_vec(&wire).unwrap_or_default()
}

/// Decodes a body of this format received where `expected` messages are consumed.
pub(super) fn decode(expected: MessageKind, body: &[u8]) -> Result<MessageRecord, WireError> {
    let wire: Wire<'_> = serde_json::from_slice(body).map_err(|error| {
        if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
            WireError::NotJson(error.to_string())
        } else {
            WireError::NotAMessage(error.to_string())
        }
    })?;
    if wire.bandeja != VERSION {
        return Err(WireError::Version(wire.bandeja));
    }
    let kind = wire.kind.kind();
    if kind != expected {
        return Err(WireError::Kind {
            expected,
            found: kind,
        });
    }
    if !crate::names::is_usable_type_name(&wire.message_type) {
        let error = MessageError::invalid_type(wire.id, &wire.message_type);
        return Err(WireError::not_a_message(&error));
    }
    if kind == MessageKind::Command && wire.target_service.as_deref().is_none_or(str::is_empty) {
        return Err(WireError::NotAMessage(
            "a command without `target_service`".to_owned(),
        ));
    }
    let mut headers = wire.headers.into_owned();
    // An empty source service is none (as a CloudEvent's `source` cannot be empty).
    if headers.source_service.as_deref() == Some("") {
        headers.source_service = None;
    }
    Ok(MessageRecord {
        id: wire.id,
        kind,
        tenant_id: wire.tenant_id,
        message_type: wire.message_type.into_owned(),
        schema_version: wire.schema_version,
        partition_key: wire.partition_key.map(Cow::into_owned),
        aggregate_type: wire.aggregate_type.map(Cow::into_owned),
        aggregate_id: wire.aggregate_id.map(Cow::into_owned),
        payload: wire.payload.get().to_owned(),
        headers,
        source_tenant_id: wire.source_tenant_id,
        target_tenant_id: wire.target_tenant_id,
        target_service: wire.target_service.map(Cow::into_owned),
        occurred_at: wire.occurred_at,
    })
}
