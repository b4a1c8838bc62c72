//! The wire format every broker transport carries: one JSON document per message, the same
//! on NATS, RabbitMQ, Redis and the direct transport, and one that other languages speak:
//! a [CloudEvents 1.0](https://cloudevents.io) event in structured JSON mode (see
//! [`cloudevents`] for how the fields map, and docs/brokers.md for its JSON Schema).
//!
//! ```json
//! {"specversion":"1.0","id":"0190…","source":"order","type":"shop.OrderPlaced",
//!  "time":"2026-11-30T12:00:00.000001Z","datacontenttype":"application/json",
//!  "subject":"o-1","bandejakind":"event","schemaversion":1,"tenantid":"acme",
//!  "partitionkey":"o-1","aggregatetype":"Order","correlationid":"…",
//!  "traceparent":"00-…","data":{…}}
//! ```
//!
//! Bodies in bandeja's earlier format ([`legacy`], `{"bandeja":1,…}`) are still read:
//! streams and queues written before the envelope hold them. `data` is the message's JSON
//! as it sits in the outbox (not re-encoded). Decoding checks what a row needs (an id, a
//! usable type name, the kind the subject or queue carries, text without NUL characters,
//! which no store keeps) and says what is wrong otherwise; [`reject`] turns such a body
//! into an inbox row that is stored FAILED with the reason instead of being lost or
//! blocking the consumer.

pub mod cloudevents;
pub mod legacy;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::envelope::{Headers, MessageId};
use crate::error::MessageError;
pub use crate::names::{MALFORMED_TYPE, REJECTED_HEADER, REJECTED_SUBSCRIBER};
use crate::record::{MessageKind, MessageRecord};
use crate::tenant::TenantId;

/// The version of bandeja's earlier wire format, which this build still reads.
pub const WIRE_VERSION: u32 = legacy::VERSION;

/// A message's kind as both formats write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum WireKind {
    Event,
    Command,
}

impl WireKind {
    fn of(kind: MessageKind) -> Self {
        match kind {
            MessageKind::Event => WireKind::Event,
            MessageKind::Command => WireKind::Command,
        }
    }

    fn kind(self) -> MessageKind {
        match self {
            WireKind::Event => MessageKind::Event,
            WireKind::Command => MessageKind::Command,
        }
    }
}

/// Why a body is not a message this build can store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// Not JSON at all.
    #[error("the body is not JSON ({0}): only CloudEvents (structured JSON mode) and bandeja messages belong on this subject or queue")]
    NotJson(String),
    /// JSON, but not a bandeja message (a field missing or of the wrong type).
    #[error("the body is not a bandeja message: {0}")]
    NotAMessage(String),
    /// Written by a newer version of bandeja's earlier format.
    #[error("wire format version {0} is not supported (this build reads CloudEvents 1.0 and bandeja's format version {WIRE_VERSION}): upgrade this service")]
    Version(u32),
    /// A CloudEvent of a specification version other than 1.0.
    #[error("CloudEvents `specversion` {0:?} is not supported (this build reads 1.0): publish CloudEvents 1.0")]
    SpecVersion(String),
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

/// The row's payload as raw JSON, borrowed (checked, not copied); text that is not JSON
/// goes as a string.
fn payload_of(record: &MessageRecord) -> Cow<'_, RawValue> {
    serde_json::from_str::<&RawValue>(&record.payload)
        .map(Cow::Borrowed)
        .unwrap_or_else(|_| Cow::Owned(json_string(&record.payload)))
}

/// Encodes a record for the wire as a CloudEvent; its `source` is the record's source
/// service (when not empty), else `source_service`, else [`cloudevents::UNKNOWN_SOURCE`].
pub fn encode(record: &MessageRecord, source_service: Option<&str>) -> Vec<u8> {
    let source = record
        .headers
        .source_service
        .as_deref()
        .filter(|service| !service.is_empty())
        .or(source_service)
        .unwrap_or(cloudevents::UNKNOWN_SOURCE);
    cloudevents::encode(record, source, payload_of(record))
}

/// Encodes a record in bandeja's earlier format ([`legacy`]); `source_service` fills the
/// header when the record has none.
pub fn encode_legacy(record: &MessageRecord, source_service: Option<&str>) -> Vec<u8> {
    let mut headers = Cow::Borrowed(&record.headers);
    if record.headers.source_service.is_none() {
        if let Some(service) = source_service {
            headers.to_mut().source_service = Some(service.to_owned());
        }
    }
    legacy::encode(record, headers, payload_of(record))
}

/// The content type of a body [`encode`] or [`encode_legacy`] wrote, for brokers whose
/// messages carry one: [`cloudevents::CONTENT_TYPE`] for a CloudEvent, else
/// `application/json`.
pub fn content_type(body: &[u8]) -> &'static str {
    if body.starts_with(br#"{"specversion""#) {
        cloudevents::CONTENT_TYPE
    } else {
        "application/json"
    }
}

/// A string as a JSON string literal (serializing a string cannot fail).
fn json_string(text: &str) -> Box<RawValue> {
    serde_json::value::to_raw_value(text).unwrap_or_default()
}

/// Decodes a body received on a subscription of `expected` messages: a CloudEvent, or a
/// body of bandeja's earlier format.
pub fn decode(expected: MessageKind, body: &[u8]) -> Result<MessageRecord, WireError> {
    // One parse for either format: a body that mentions `specversion` is read as a
    // CloudEvent, and only if that fails and the mention was not the top level's is it
    // read as the earlier format.
    let record = if looks_like_cloudevent(body) {
        match cloudevents::decode(expected, body) {
            Ok(record) => record,
            Err(error) if cloudevents::has_spec_version(body) => return Err(error),
            Err(_) => legacy::decode(expected, body)?,
        }
    } else {
        legacy::decode(expected, body)?
    };
    // Text no store can keep (a NUL character) is refused here, so that it becomes a
    // rejected row instead of an insert that fails on every redelivery.
    record
        .check_storable()
        .map_err(|e| WireError::not_a_message(&e))?;
    Ok(record)
}

/// Whether `"specversion"` appears in `body` at all (cheap).
fn looks_like_cloudevent(body: &[u8]) -> bool {
    const NEEDLE: &[u8] = b"\"specversion\"";
    body.windows(NEEDLE.len()).any(|window| window == NEEDLE)
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

    /// `body` parsed, changed by `change`, written again.
    fn changed(body: &[u8], change: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
        let mut value: serde_json::Value = serde_json::from_slice(body).expect("json");
        change(&mut value);
        value.to_string().into_bytes()
    }

    #[test]
    fn the_envelope_is_a_cloudevent_with_every_field_as_an_attribute() {
        let record = event();
        let body: serde_json::Value =
            serde_json::from_slice(&encode(&record, Some("order"))).expect("json");
        assert_eq!(body["specversion"], "1.0");
        assert_eq!(body["id"], record.id.to_string());
        assert_eq!(body["source"], "order");
        assert_eq!(body["type"], "shop.OrderPlaced");
        assert_eq!(body["datacontenttype"], "application/json");
        assert_eq!(body["subject"], "o-1");
        assert_eq!(body["aggregatetype"], "Order");
        assert_eq!(body["bandejakind"], "event");
        assert_eq!(body["schemaversion"], 3);
        assert_eq!(body["tenantid"], "default");
        assert_eq!(body["correlationid"], "corr-1");
        assert_eq!(
            body["traceparent"],
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        );
        assert_eq!(body["bandejaheaders"], r#"{"x-app":"v"}"#);
        assert_eq!(body["data"]["order"], 7);
        let time = body["time"].as_str().expect("time");
        assert_eq!(
            chrono::DateTime::parse_from_rfc3339(time).map(|t| t.to_utc()),
            Ok(record.occurred_at)
        );
        for name in body.as_object().expect("object").keys() {
            assert!(
                name == "data"
                    || name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()),
                "`{name}` is not a valid CloudEvents attribute name"
            );
        }
    }

    #[test]
    fn the_content_type_says_which_format_a_body_is() {
        assert_eq!(
            content_type(&encode(&event(), None)),
            "application/cloudevents+json"
        );
        assert_eq!(
            content_type(&encode_legacy(&event(), None)),
            "application/json"
        );
    }

    #[test]
    fn bodies_of_the_earlier_format_are_still_read() {
        let record = event();
        let body = encode_legacy(&record, Some("order"));
        assert!(body.starts_with(br#"{"bandeja":1,"#));
        let mut expected = record.clone();
        expected.headers.source_service = Some("order".into());
        assert_eq!(decode(MessageKind::Event, &body), Ok(expected.clone()));
        // A payload that mentions `specversion` does not make a CloudEvent of it.
        let mentions = changed(&body, |b| b["payload"]["specversion"] = "1.0".into());
        let decoded = decode(MessageKind::Event, &mentions).expect("still the earlier format");
        assert_eq!(decoded.id, record.id);
    }

    #[test]
    fn a_foreign_cloudevent_with_only_the_required_attributes_is_read() {
        let body = br#"{"specversion":"1.0","id":"py-1","source":"/python/orders",
            "type":"shop.OrderPlaced","data":{"order":1,"note":"from python"},
            "myext":"mine","count":3,"flag":true,"nested":{"dropped":1}}"#;
        let record = decode(MessageKind::Event, body).expect("decode");
        assert_eq!(record.kind, MessageKind::Event, "the subscription's kind");
        assert_eq!(record.schema_version, 1);
        assert_eq!(record.tenant_id, TenantId::default_tenant());
        assert_eq!(record.payload, r#"{"order":1,"note":"from python"}"#);
        assert_eq!(
            record.headers.source_service.as_deref(),
            Some("/python/orders")
        );
        let extra = &record.headers.extra;
        assert_eq!(
            extra
                .get(cloudevents::FOREIGN_ID_HEADER)
                .map(String::as_str),
            Some("py-1")
        );
        assert_eq!(extra.get("myext").map(String::as_str), Some("mine"));
        assert_eq!(extra.get("count").map(String::as_str), Some("3"));
        assert_eq!(extra.get("flag").map(String::as_str), Some("true"));
        assert!(!extra.contains_key("nested"));

        let again = decode(MessageKind::Event, body).expect("decode");
        assert_eq!(again.id, record.id, "a redelivered copy has the same id");
        let elsewhere = String::from_utf8_lossy(body).replace("/python/orders", "/other");
        let other = decode(MessageKind::Event, elsewhere.as_bytes()).expect("decode");
        assert_ne!(other.id, record.id, "the same id from another source");

        let uuid = "0190a5e2-7c3b-7000-8000-000000000001";
        let with_uuid = String::from_utf8_lossy(body).replace("py-1", uuid);
        let kept = decode(MessageKind::Event, with_uuid.as_bytes()).expect("decode");
        assert_eq!(kept.id.to_string(), uuid, "a UUID id is the message id");
        assert!(!kept
            .headers
            .extra
            .contains_key(cloudevents::FOREIGN_ID_HEADER));

        let no_data = decode(
            MessageKind::Event,
            br#"{"specversion":"1.0","id":"a","source":"s","type":"x.Y","schemaversion":"2"}"#,
        )
        .expect("decode");
        assert_eq!(no_data.payload, "null");
        assert_eq!(no_data.schema_version, 2, "a version written as text");
    }

    #[test]
    fn headers_from_the_wire_never_stand_for_the_fields_and_other_uuid_spellings_are_ids() {
        let body = br#"{"specversion":"1.0","id":"a","source":"py","type":"x.Y",
            "bandejakind":"event","correlationid":"real",
            "bandejaheaders":"{\"source_service\":\"billing\",\"causation_id\":\"x\",\"k\":\"v\"}"}"#;
        let record = decode(MessageKind::Event, body).expect("decode");
        assert_eq!(record.headers.source_service.as_deref(), Some("py"));
        assert_eq!(record.headers.correlation_id.as_deref(), Some("real"));
        assert_eq!(record.headers.extra.len(), 2, "{:?}", record.headers.extra);
        assert_eq!(record.headers.extra.get("k").map(String::as_str), Some("v"));
        assert!(record.check_storable().is_ok());
        let foreign = br#"{"specversion":"1.0","id":"x","source":"py","type":"x.Y",
            "source_service":"billing","Bad-Name":"1"}"#;
        let record = decode(MessageKind::Event, foreign).expect("decode");
        assert_eq!(record.headers.source_service.as_deref(), Some("py"));
        assert!(!record.headers.extra.contains_key("source_service"));
        assert!(!record.headers.extra.contains_key("Bad-Name"));

        let uuid = "0190a5e2-7c3b-7000-8000-000000000001";
        for other in [
            uuid.to_uppercase(),
            uuid.replace('-', ""),
            format!("{{{uuid}}}"),
            format!("urn:uuid:{uuid}"),
        ] {
            let body =
                format!(r#"{{"specversion":"1.0","id":"{other}","source":"s","type":"x.Y"}}"#);
            let record = decode(MessageKind::Event, body.as_bytes()).expect("decode");
            assert_ne!(
                record.id.to_string(),
                uuid,
                "{other} is not the canonical form"
            );
            assert_eq!(
                record.headers.extra.get(cloudevents::FOREIGN_ID_HEADER),
                Some(&other)
            );
        }
    }

    #[test]
    fn an_empty_aggregate_id_is_no_empty_subject() {
        let mut record = event();
        record.aggregate_id = Some(String::new());
        let body: serde_json::Value =
            serde_json::from_slice(&encode(&record, Some("order"))).expect("json");
        assert!(body.get("subject").is_none(), "{body}");
        let decoded = decode(MessageKind::Event, &encode(&record, Some("order"))).expect("decode");
        assert_eq!(decoded.aggregate_id.as_deref(), Some(""));
    }

    #[test]
    fn a_foreign_command_needs_its_target_service() {
        let body = br#"{"specversion":"1.0","id":"c-1","source":"py","type":"billing.Charge",
            "tenantid":"acme","data":{}}"#;
        let refused = decode(MessageKind::Command, body);
        assert!(
            matches!(&refused, Err(WireError::NotAMessage(m)) if m.contains("targetservice")),
            "{refused:?}"
        );
        let body = changed(body, |b| b["targetservice"] = "billing".into());
        let command = decode(MessageKind::Command, &body).expect("decode");
        let acme = TenantId::new("acme").expect("tenant");
        assert_eq!(command.target_service.as_deref(), Some("billing"));
        assert_eq!(command.tenant_id, acme);
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
        let legacy = encode_legacy(&event(), None);
        let newer = decode(
            MessageKind::Event,
            &changed(&legacy, |b| b["bandeja"] = 9.into()),
        );
        assert_eq!(newer, Err(WireError::Version(9)));

        let body = encode(&event(), None);
        let wrong_kind = decode(MessageKind::Command, &body);
        assert_eq!(
            wrong_kind
                .expect_err("an event on a command queue")
                .to_string(),
            "the body is of kind `event` where `command`s are consumed: check the publisher's \
             routing"
        );
        let old_spec = decode(
            MessageKind::Event,
            &changed(&body, |b| b["specversion"] = "0.3".into()),
        );
        assert_eq!(old_spec, Err(WireError::SpecVersion("0.3".into())));
        let binary = decode(
            MessageKind::Event,
            &changed(&body, |b| b["data_base64"] = "AAEC".into()),
        );
        assert!(matches!(binary, Err(WireError::Payload(_))), "{binary:?}");
        for (name, value) in [
            ("type", serde_json::Value::from("two words")),
            ("id", "".into()),
            ("source", "".into()),
            ("schemaversion", "two".into()),
            ("tenantid", "".into()),
            ("bandejaheaders", "[1]".into()),
        ] {
            let bad = decode(MessageKind::Event, &changed(&body, |b| b[name] = value));
            assert!(
                matches!(&bad, Err(WireError::NotAMessage(_))),
                "{name}: {bad:?}"
            );
        }
        let no_source = decode(
            MessageKind::Event,
            &changed(&body, |b| {
                b.as_object_mut().map(|o| o.remove("source"));
            }),
        );
        assert!(matches!(&no_source, Err(WireError::NotAMessage(m)) if m.contains("source")));
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
        for body in [encode(&event(), None), encode_legacy(&event(), None)] {
            let field = if body.starts_with(br#"{"bandeja""#) {
                ("aggregate_id", "payload")
            } else {
                ("subject", "data")
            };
            let refused = decode(
                MessageKind::Event,
                &changed(&body, |b| b[field.0] = "o\u{0}1".into()),
            );
            assert!(
                matches!(&refused, Err(WireError::NotAMessage(m)) if m.contains("NUL")),
                "{refused:?}"
            );
            let in_payload = changed(&body, |b| {
                b[field.1] = serde_json::json!({ "note": "a\u{0}b" });
            });
            assert!(decode(MessageKind::Event, &in_payload).is_err());
        }

        let row = malformed(MessageKind::Event, b"nul \0 inside", "reason \0 too");
        assert_eq!(row.check_storable().ok(), Some(()));
        assert!(reject(event(), "why \0").check_storable().is_ok());
    }
}
