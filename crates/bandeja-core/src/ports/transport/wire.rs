//! The wire format every broker transport carries: one JSON document per message, the same
//! on NATS, RabbitMQ and the direct transport, so a service on one language version of
//! bandeja reads what another wrote.
//!
//! ```json
//! {"bandeja":1,"id":"0190…","kind":"event","type":"shop.OrderPlaced","schema_version":1,
//!  "tenant_id":"acme","partition_key":"o-1","aggregate_type":"Order","aggregate_id":"o-1",
//!  "payload":{…},"headers":{"correlation_id":"…","traceparent":"00-…","source_service":"order"},
//!  "occurred_at":"2026-11-30T12:00:00.000001Z"}
//! ```
//!
//! Commands add `source_tenant_id`, `target_tenant_id` and `target_service`. `payload` is
//! the message's JSON as it sits in the outbox (not re-encoded). Decoding checks what a row
//! needs (an id, a usable type name, the kind the subject or queue carries, text without
//! NUL characters, which no store keeps) and says what is wrong otherwise; [`reject`]
//! turns such a body into an inbox row that is stored FAILED with the reason instead of
//! being lost or blocking the consumer.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::envelope::{Headers, MessageId};
use crate::error::MessageError;
pub use crate::names::{MALFORMED_TYPE, REJECTED_HEADER, REJECTED_SUBSCRIBER};
use crate::record::{MessageKind, MessageRecord};
use crate::tenant::TenantId;

/// The version of the wire format this build writes and reads.
pub const WIRE_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum WireKind {
    Event,
    Command,
}

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

/// Why a body is not a message this build can store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// Not JSON at all.
    #[error("the body is not JSON ({0}): only bandeja messages belong on this subject or queue")]
    NotJson(String),
    /// JSON, but not a bandeja message (a field missing or of the wrong type).
    #[error("the body is not a bandeja message: {0}")]
    NotAMessage(String),
    /// Written by a newer wire format.
    #[error("wire format version {0} is not supported (this build reads version {WIRE_VERSION}): upgrade this service")]
    Version(u32),
    /// An event on a command subject or queue, or the other way round.
    #[error("the body is of kind `{found}` where `{expected}`s are consumed: check the publisher's routing")]
    Kind {
        /// What the subscription consumes.
        expected: MessageKind,
        /// What the body says it is.
        found: MessageKind,
    },
    /// The payload is not serialized JSON text the payload column can hold.
    #[error("the payload is not usable: {0}")]
    Payload(String),
}

impl WireError {
    /// A body whose message breaks an envelope rule: the reason (kept in the rejected row)
    /// says what is wrong and what to do.
    fn not_a_message(error: &MessageError) -> Self {
        WireError::NotAMessage(format!("{error}: {}", error.hint()))
    }
}

/// Encodes a record for the wire; `source_service` fills the header when the record has none.
pub fn encode(record: &MessageRecord, source_service: Option<&str>) -> Vec<u8> {
    let mut headers = Cow::Borrowed(&record.headers);
    if record.headers.source_service.is_none() {
        if let Some(service) = source_service {
            headers.to_mut().source_service = Some(service.to_owned());
        }
    }
    // Borrowed from the row (checked, not copied); text that is not JSON goes as a string.
    let payload = serde_json::from_str::<&RawValue>(&record.payload)
        .map(Cow::Borrowed)
        .unwrap_or_else(|_| Cow::Owned(json_string(&record.payload)));
    let wire = Wire {
        bandeja: WIRE_VERSION,
        id: record.id,
        kind: match record.kind {
            MessageKind::Event => WireKind::Event,
            MessageKind::Command => WireKind::Command,
        },
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

/// A string as a JSON string literal (serializing a string cannot fail).
fn json_string(text: &str) -> Box<RawValue> {
    serde_json::value::to_raw_value(text).unwrap_or_default()
}

/// Decodes a body received on a subscription of `expected` messages.
pub fn decode(expected: MessageKind, body: &[u8]) -> Result<MessageRecord, WireError> {
    let wire: Wire<'_> = match serde_json::from_slice(body) {
        Ok(wire) => wire,
        Err(error) => {
            return Err(
                if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
                    WireError::NotJson(error.to_string())
                } else {
                    WireError::NotAMessage(error.to_string())
                },
            )
        }
    };
    if wire.bandeja != WIRE_VERSION {
        return Err(WireError::Version(wire.bandeja));
    }
    let kind = match wire.kind {
        WireKind::Event => MessageKind::Event,
        WireKind::Command => MessageKind::Command,
    };
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
    let record = MessageRecord {
        id: wire.id,
        kind,
        tenant_id: wire.tenant_id,
        message_type: wire.message_type.into_owned(),
        schema_version: wire.schema_version,
        partition_key: wire.partition_key.map(Cow::into_owned),
        aggregate_type: wire.aggregate_type.map(Cow::into_owned),
        aggregate_id: wire.aggregate_id.map(Cow::into_owned),
        payload: wire.payload.get().to_owned(),
        headers: wire.headers.into_owned(),
        source_tenant_id: wire.source_tenant_id,
        target_tenant_id: wire.target_tenant_id,
        target_service: wire.target_service.map(Cow::into_owned),
        occurred_at: wire.occurred_at,
    };
    // Text no store can keep (a NUL character) is refused here, so that it becomes a
    // rejected row instead of an insert that fails on every redelivery.
    record
        .check_storable()
        .map_err(|e| WireError::not_a_message(&e))?;
    Ok(record)
}

/// `text` without NUL characters (each becomes U+FFFD), which no store can keep.
fn storable(text: &str) -> Cow<'_, str> {
    if text.contains('\0') {
        Cow::Owned(text.replace('\0', "\u{fffd}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The namespace of the ids given to bodies that are not messages (UUID v5 of the body, so
/// a redelivered copy of the same body is absorbed by the inbox).
const MALFORMED_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x6261_6e64_656a_6100_8000_0000_0000_0001);

/// Most of a malformed body kept in the row's payload.
const KEPT_BODY_BYTES: usize = 64 * 1024;

/// The inbox record of a body that is not a message: type [`MALFORMED_TYPE`], a stable id
/// derived from the body, the body (as text, at most 64 KiB) as the payload, and `reason`
/// in the [`REJECTED_HEADER`] header.
pub fn malformed(kind: MessageKind, body: &[u8], reason: &str) -> MessageRecord {
    let id = MessageId(uuid::Uuid::new_v5(&MALFORMED_NAMESPACE, body));
    let kept = &body[..body.len().min(KEPT_BODY_BYTES)];
    let lossy = String::from_utf8_lossy(kept);
    let text = storable(&lossy);
    let mut headers = Headers::default();
    headers
        .extra
        .insert(REJECTED_HEADER.to_owned(), storable(reason).into_owned());
    let tenant = TenantId::default_tenant();
    MessageRecord {
        id,
        kind,
        tenant_id: tenant.clone(),
        message_type: MALFORMED_TYPE.to_owned(),
        schema_version: 0,
        partition_key: None,
        aggregate_type: None,
        aggregate_id: None,
        payload: json_string(&text).get().to_owned(),
        headers,
        source_tenant_id: (kind == MessageKind::Command).then(|| tenant.clone()),
        target_tenant_id: (kind == MessageKind::Command).then_some(tenant),
        target_service: (kind == MessageKind::Command).then(|| "unknown".to_owned()),
        occurred_at: crate::envelope::now_micros(),
    }
}

/// Marks a decoded record as rejected with `reason` (a type no local subscriber handles).
pub fn reject(mut record: MessageRecord, reason: &str) -> MessageRecord {
    record
        .headers
        .extra
        .insert(REJECTED_HEADER.to_owned(), storable(reason).into_owned());
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{Command, Event};

    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Placed {
        order: u32,
        note: String,
    }
    impl crate::Payload for Placed {
        const TYPE: &'static str = "shop.OrderPlaced";
        const VERSION: u32 = 3;
    }

    fn event() -> MessageRecord {
        let mut event = Event::new(
            "Order",
            "o-1",
            Placed {
                order: 7,
                note: "ñ \"q\"".into(),
            },
        );
        event.correlation_id = Some("corr-1".into());
        event.headers.traceparent =
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into());
        event.headers.extra.insert("x-app".into(), "v".into());
        MessageRecord::from_event(&event).expect("record")
    }

    #[test]
    fn events_round_trip_with_every_field_and_the_source_service() {
        let record = event();
        let decoded = decode(MessageKind::Event, &encode(&record, Some("order"))).expect("decode");
        let mut expected = record.clone();
        expected.headers.source_service = Some("order".into());
        assert_eq!(decoded, expected);
    }

    #[test]
    fn commands_round_trip_and_keep_an_existing_source_service() {
        let tenant = TenantId::new("acme").expect("tenant");
        let command = crate::tenant::sync_scope(tenant, || {
            Command::to_self(
                "billing",
                Placed {
                    order: 1,
                    note: String::new(),
                },
            )
        })
        .expect("command");
        let mut record = MessageRecord::from_command(&command).expect("record");
        record.headers.source_service = Some("shop".into());
        let decoded =
            decode(MessageKind::Command, &encode(&record, Some("other"))).expect("decode");
        assert_eq!(decoded, record);
    }

    #[test]
    fn bad_bodies_say_what_is_wrong() {
        let not_json = decode(MessageKind::Event, b"{nope");
        assert!(
            matches!(not_json, Err(WireError::NotJson(_))),
            "{not_json:?}"
        );
        let no_id = decode(MessageKind::Event, br#"{"bandeja":1,"kind":"event"}"#);
        assert!(
            matches!(&no_id, Err(WireError::NotAMessage(m)) if m.contains("id")),
            "{no_id:?}"
        );
        let mut body: serde_json::Value =
            serde_json::from_slice(&encode(&event(), None)).expect("json");
        body["bandeja"] = 9.into();
        let newer = decode(MessageKind::Event, body.to_string().as_bytes());
        assert_eq!(newer, Err(WireError::Version(9)));
        let wrong_kind = decode(MessageKind::Command, &encode(&event(), None));
        assert!(matches!(wrong_kind, Err(WireError::Kind { .. })));
        assert_eq!(
            wrong_kind
                .expect_err("an event on a command queue")
                .to_string(),
            "the body is of kind `event` where `command`s are consumed: check the publisher's \
             routing"
        );
        body["bandeja"] = 1.into();
        body["type"] = "two words".into();
        assert!(decode(MessageKind::Event, body.to_string().as_bytes()).is_err());
    }

    #[test]
    fn malformed_bodies_get_a_stable_id_and_keep_their_text() {
        let a = malformed(MessageKind::Event, b"\xffgarbage", "not JSON");
        let b = malformed(MessageKind::Event, b"\xffgarbage", "not JSON");
        assert_eq!(a.id, b.id, "a redelivered copy is absorbed");
        assert_ne!(a.id, malformed(MessageKind::Event, b"other", "x").id);
        let text: String = serde_json::from_str(&a.payload).expect("payload is a JSON string");
        assert!(text.ends_with("garbage"));
        assert_eq!(
            a.headers.extra.get(REJECTED_HEADER).map(String::as_str),
            Some("not JSON")
        );
        let command = malformed(MessageKind::Command, b"", "empty");
        assert!(command.target_service.is_some());
    }

    #[test]
    fn nul_characters_are_refused_and_never_reach_a_rejected_row() {
        let mut body: serde_json::Value =
            serde_json::from_slice(&encode(&event(), None)).expect("json");
        body["aggregate_id"] = "o\u{0}1".into();
        let refused = decode(MessageKind::Event, body.to_string().as_bytes());
        assert!(
            matches!(&refused, Err(WireError::NotAMessage(m)) if m.contains("NUL")),
            "{refused:?}"
        );
        body["aggregate_id"] = "o-1".into();
        body["payload"] = serde_json::json!({ "note": "a\u{0}b" });
        assert!(decode(MessageKind::Event, body.to_string().as_bytes()).is_err());

        let row = malformed(MessageKind::Event, b"nul \0 inside", "reason \0 too");
        assert_eq!(row.check_storable().ok(), Some(()));
        assert!(reject(event(), "why \0").check_storable().is_ok());
    }
}
