//! CloudEvents 1.0 in structured JSON mode: the envelope bandeja writes on every broker and
//! reads from any client that speaks CloudEvents (the SDKs of Python, Java, Go, .NET, …).
//!
//! The message's fields map to the specification's attributes where it has one (`id`,
//! `source` = the emitting service, `type`, `time`, `subject` = the aggregate id,
//! `datacontenttype`, `data`), to its documented extensions where one exists
//! (`partitionkey` of the Partitioning extension, `traceparent` of Distributed Tracing),
//! and to extension attributes of bandeja's otherwise (`bandejakind`, `schemaversion`,
//! `tenantid`, `aggregatetype`, `correlationid`, `causationid`, the command's
//! `targetservice`, `sourcetenantid`, `targettenantid`, and `bandejaheaders`: the other
//! application headers as the text of a JSON object, since extension names are limited
//! to lowercase letters and digits).
//!
//! Reading is tolerant of what other clients write: only `specversion`, `id`, `source`
//! and `type` are required. Without `bandejakind` the kind is the one the subject or
//! queue carries; without `schemaversion` the version is 1, without `tenantid` the default
//! tenant, without `time` the time of arrival. An `id` that is not a UUID becomes the
//! UUID v5 of `source` and `id` (the pair the specification makes unique), so a
//! redelivered copy is still absorbed by the inbox; the original is kept in the
//! `cloudevents_id` header. Other extension attributes of a string, number or boolean
//! value are kept as headers of their name.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{WireError, WireKind};
use crate::envelope::{Headers, MessageId};
use crate::error::MessageError;
use crate::record::{MessageKind, MessageRecord};
use crate::tenant::TenantId;

/// The CloudEvents version written and read.
pub const SPEC_VERSION: &str = "1.0";

/// The content type of a structured-mode CloudEvent, for brokers whose messages carry one
/// (AMQP's `content-type` property, a NATS or Kafka header).
pub const CONTENT_TYPE: &str = "application/cloudevents+json";

/// The `source` of a message whose emitting service is not known (read back as no
/// source service).
pub const UNKNOWN_SOURCE: &str = "urn:bandeja:unknown-service";

/// The header that keeps a foreign event's `id` when it is not a UUID.
pub const FOREIGN_ID_HEADER: &str = "cloudevents_id";

/// The namespace of the UUID v5 given to foreign ids that are not UUIDs.
const FOREIGN_ID_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x6261_6e64_656a_6100_8000_0000_0000_0002);

/// The names of the headers a message has fields for: an extra header of one of these
/// names (from `bandejaheaders` or a foreign extension) is dropped, never allowed to
/// stand for the field.
const HEADER_FIELDS: [&str; 4] = [
    "correlation_id",
    "causation_id",
    "traceparent",
    "source_service",
];

/// The attributes this module reads itself (every other one is a header).
const KNOWN: [&str; 22] = [
    "specversion",
    "id",
    "source",
    "type",
    "time",
    "datacontenttype",
    "subject",
    "data",
    "data_base64",
    "bandejakind",
    "schemaversion",
    "tenantid",
    "partitionkey",
    "aggregateid",
    "aggregatetype",
    "correlationid",
    "causationid",
    "traceparent",
    "sourcetenantid",
    "targettenantid",
    "targetservice",
    "bandejaheaders",
];

#[derive(Serialize)]
struct Outgoing<'a> {
    specversion: &'static str,
    id: MessageId,
    source: &'a str,
    #[serde(rename = "type")]
    message_type: &'a str,
    time: DateTime<Utc>,
    datacontenttype: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<&'a str>,
    bandejakind: WireKind,
    schemaversion: u32,
    tenantid: &'a TenantId,
    #[serde(skip_serializing_if = "Option::is_none")]
    partitionkey: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    aggregateid: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    aggregatetype: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    correlationid: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    causationid: Option<MessageId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    traceparent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sourcetenantid: Option<&'a TenantId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    targettenantid: Option<&'a TenantId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    targetservice: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bandejaheaders: Option<String>,
    data: Cow<'a, RawValue>,
}

/// A schema version as another client may write it: a number, or digits in a string (what
/// a binary-mode header becomes).
#[derive(Deserialize)]
#[serde(untagged)]
enum Version {
    Number(u32),
    Text(String),
}

#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(borrow)]
    specversion: Cow<'a, str>,
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    source: Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    message_type: Cow<'a, str>,
    #[serde(default)]
    time: Option<DateTime<Utc>>,
    #[serde(default, borrow)]
    subject: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    aggregateid: Option<Cow<'a, str>>,
    #[serde(default)]
    bandejakind: Option<WireKind>,
    #[serde(default)]
    schemaversion: Option<Version>,
    #[serde(default)]
    tenantid: Option<TenantId>,
    #[serde(default, borrow)]
    partitionkey: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    aggregatetype: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    correlationid: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    causationid: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    traceparent: Option<Cow<'a, str>>,
    #[serde(default)]
    sourcetenantid: Option<TenantId>,
    #[serde(default)]
    targettenantid: Option<TenantId>,
    #[serde(default, borrow)]
    targetservice: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    bandejaheaders: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    data: Option<Cow<'a, RawValue>>,
    #[serde(default)]
    data_base64: Option<serde::de::IgnoredAny>,
}

/// Encodes a record as a structured-mode CloudEvent; `source` is the emitting service.
pub(super) fn encode(record: &MessageRecord, source: &str, payload: Cow<'_, RawValue>) -> Vec<u8> {
    let headers = &record.headers;
    let bandejaheaders = (!headers.extra.is_empty())
        .then(|| serde_json::to_string(&headers.extra).unwrap_or_default());
    let event = Outgoing {
        specversion: SPEC_VERSION,
        id: record.id,
        source,
        message_type: &record.message_type,
        time: record.occurred_at,
        datacontenttype: "application/json",
        // The specification forbids an empty `subject`: an empty aggregate id goes in
        // `aggregateid` instead.
        subject: record.aggregate_id.as_deref().filter(|id| !id.is_empty()),
        aggregateid: record.aggregate_id.as_deref().filter(|id| id.is_empty()),
        bandejakind: WireKind::of(record.kind),
        schemaversion: record.schema_version,
        tenantid: &record.tenant_id,
        partitionkey: record.partition_key.as_deref(),
        aggregatetype: record.aggregate_type.as_deref(),
        correlationid: headers.correlation_id.as_deref(),
        causationid: headers.causation_id,
        traceparent: headers.traceparent.as_deref(),
        sourcetenantid: record.source_tenant_id.as_ref(),
        targettenantid: record.target_tenant_id.as_ref(),
        targetservice: record.target_service.as_deref(),
        bandejaheaders,
        data: payload,
    };
    // Serializing this struct cannot fail: every field is a string, number or raw JSON.
    serde_json::to_vec(&event).unwrap_or_default()
}

/// Whether `body` has a `specversion` attribute at its top level (a CloudEvent, even one
/// this module cannot read) rather than somewhere inside.
pub(super) fn has_spec_version(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        specversion: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Probe>(body).is_ok_and(|probe| probe.specversion.is_some())
}

/// Decodes a structured-mode CloudEvent received where `expected` messages are consumed.
pub(super) fn decode(expected: MessageKind, body: &[u8]) -> Result<MessageRecord, WireError> {
    let event: Incoming<'_> = serde_json::from_slice(body).map_err(|e| {
        WireError::NotAMessage(format!("a CloudEvent this service cannot read: {e}"))
    })?;
    if event.specversion != SPEC_VERSION {
        return Err(WireError::SpecVersion(event.specversion.into_owned()));
    }
    if event.data_base64.is_some() {
        return Err(WireError::Payload(
            "binary data (`data_base64`) is not supported: send the data as JSON (`data`) \
             with `datacontenttype` application/json"
                .to_owned(),
        ));
    }
    if event.source.is_empty() {
        return Err(WireError::NotAMessage(
            "a CloudEvent with an empty `source`: name the emitting service".to_owned(),
        ));
    }
    let kind = event.bandejakind.map_or(expected, WireKind::kind);
    if kind != expected {
        return Err(WireError::Kind {
            expected,
            found: kind,
        });
    }
    let mut headers = Headers {
        correlation_id: event.correlationid.map(Cow::into_owned),
        causation_id: None,
        traceparent: event.traceparent.map(Cow::into_owned),
        source_service: (event.source != UNKNOWN_SOURCE).then(|| event.source.clone().into_owned()),
        extra: BTreeMap::new(),
    };
    if let Some(causation) = event.causationid {
        match causation.parse::<MessageId>() {
            Ok(id) => headers.causation_id = Some(id),
            Err(_) => {
                headers
                    .extra
                    .insert("causationid".to_owned(), causation.into_owned());
            }
        }
    }
    if let Some(text) = &event.bandejaheaders {
        let extra: BTreeMap<String, String> = serde_json::from_str(text).map_err(|e| {
            WireError::NotAMessage(format!(
                "`bandejaheaders` is not a JSON object of strings ({e})"
            ))
        })?;
        headers.extra.extend(
            extra
                .into_iter()
                .filter(|(name, _)| !HEADER_FIELDS.contains(&name.as_str())),
        );
    }
    if event.bandejakind.is_none() {
        foreign_extensions(body, &mut headers.extra);
    }
    // Only the canonical form is taken as the message id: another spelling of a UUID
    // (braced, simple, uppercase, `urn:uuid:`) is an id like any other, unique only
    // with its source.
    let canonical = event.id.parse::<MessageId>().ok().filter(|id| {
        let mut buffer = uuid::Uuid::encode_buffer();
        *id.0.hyphenated().encode_lower(&mut buffer) == *event.id
    });
    let id = match canonical {
        Some(id) => id,
        None if event.id.is_empty() => {
            return Err(WireError::NotAMessage(
                "a CloudEvent with an empty `id`".to_owned(),
            ))
        }
        None => {
            let unique = format!("{}\u{0}{}", event.source, event.id);
            headers
                .extra
                .insert(FOREIGN_ID_HEADER.to_owned(), event.id.into_owned());
            MessageId(uuid::Uuid::new_v5(&FOREIGN_ID_NAMESPACE, unique.as_bytes()))
        }
    };
    if !crate::names::is_usable_type_name(&event.message_type) {
        let error = MessageError::invalid_type(id, &event.message_type);
        return Err(WireError::not_a_message(&error));
    }
    let schema_version = match event.schemaversion {
        None => 1,
        Some(Version::Number(n)) => n,
        Some(Version::Text(text)) => text.trim().parse().map_err(|_| {
            WireError::NotAMessage(format!(
                "`schemaversion` {text:?} is not a whole number: write the payload's version"
            ))
        })?,
    };
    let tenant_id = event.tenantid.unwrap_or_else(TenantId::default_tenant);
    let target_service = event.targetservice.map(Cow::into_owned);
    if kind == MessageKind::Command && target_service.as_deref().is_none_or(str::is_empty) {
        return Err(WireError::NotAMessage(
            "a command without the `targetservice` extension attribute: set it to the name \
             of the service that handles the command"
                .to_owned(),
        ));
    }
    let payload = match event.data {
        Some(data) => data.get().to_owned(),
        None => "null".to_owned(),
    };
    Ok(MessageRecord {
        id,
        kind,
        tenant_id,
        message_type: event.message_type.into_owned(),
        schema_version,
        partition_key: event.partitionkey.map(Cow::into_owned),
        aggregate_type: event.aggregatetype.map(Cow::into_owned),
        aggregate_id: event.subject.or(event.aggregateid).map(Cow::into_owned),
        payload,
        headers,
        source_tenant_id: event.sourcetenantid,
        target_tenant_id: event.targettenantid,
        target_service,
        occurred_at: event.time.unwrap_or_else(crate::envelope::now_micros),
    })
}

/// The extension attributes of a foreign CloudEvent that this module does not read, as
/// headers: strings as they are, numbers and booleans as their JSON text; objects and
/// arrays (which the specification does not allow as attribute values), and names the
/// specification does not allow (lowercase letters and digits only), are left out.
fn foreign_extensions(body: &[u8], extra: &mut BTreeMap<String, String>) {
    let Ok(attributes) = serde_json::from_slice::<BTreeMap<String, serde_json::Value>>(body) else {
        return;
    };
    for (name, value) in attributes {
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if KNOWN.contains(&name.as_str()) || !valid {
            continue;
        }
        let text = match value {
            serde_json::Value::String(text) => text,
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Bool(b) => b.to_string(),
            _ => continue,
        };
        extra.entry(name).or_insert(text);
    }
}
