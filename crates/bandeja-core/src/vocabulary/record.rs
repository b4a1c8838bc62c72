//! The row form of a message: what stores write ([`MessageRecord`]) and what workers claim
//! ([`StoredMessage`]), and the conversions to and from the typed envelopes.

use chrono::{DateTime, Utc};

use crate::envelope::{Command, Direction, Event, Headers, MessageId, Payload};
use crate::error::{Error, MessageError, Result, SerializeError};
use crate::names::{is_usable_name, is_usable_type_name};
use crate::status::MessageStatus;
use crate::tenant::TenantId;

/// Largest serialized payload accepted by default (1 MiB).
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 1024 * 1024;

/// Events or commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// Domain events.
    Event,
    /// Commands.
    Command,
}

impl MessageKind {
    /// The outbox of this kind.
    pub const fn outbox(self) -> BoxKind {
        match self {
            MessageKind::Event => BoxKind::OutboxEvents,
            MessageKind::Command => BoxKind::OutboxCommands,
        }
    }

    /// The inbox of this kind.
    pub const fn inbox(self) -> BoxKind {
        match self {
            MessageKind::Event => BoxKind::InboxEvents,
            MessageKind::Command => BoxKind::InboxCommands,
        }
    }

    /// `event` or `command`.
    pub const fn as_str(self) -> &'static str {
        match self {
            MessageKind::Event => "event",
            MessageKind::Command => "command",
        }
    }
}

impl std::fmt::Display for MessageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One of the four boxes. Serialized (and parsed) as its table name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoxKind {
    /// `outbox_events`
    OutboxEvents,
    /// `inbox_events`
    InboxEvents,
    /// `outbox_commands`
    OutboxCommands,
    /// `inbox_commands`
    InboxCommands,
}

impl BoxKind {
    /// The four boxes.
    pub const ALL: [BoxKind; 4] = [
        BoxKind::OutboxEvents,
        BoxKind::InboxEvents,
        BoxKind::OutboxCommands,
        BoxKind::InboxCommands,
    ];

    /// The table name (without schema or prefix).
    pub const fn table(self) -> &'static str {
        match self {
            BoxKind::OutboxEvents => "outbox_events",
            BoxKind::InboxEvents => "inbox_events",
            BoxKind::OutboxCommands => "outbox_commands",
            BoxKind::InboxCommands => "inbox_commands",
        }
    }

    /// Whether rows are keyed by `(id, subscriber)`.
    pub const fn is_inbox(self) -> bool {
        matches!(self, BoxKind::InboxEvents | BoxKind::InboxCommands)
    }

    /// Events or commands.
    pub const fn kind(self) -> MessageKind {
        match self {
            BoxKind::OutboxEvents | BoxKind::InboxEvents => MessageKind::Event,
            BoxKind::OutboxCommands | BoxKind::InboxCommands => MessageKind::Command,
        }
    }

    /// This box's position in [`BoxKind::ALL`]: the index of per-box arrays.
    pub const fn index(self) -> usize {
        match self {
            BoxKind::OutboxEvents => 0,
            BoxKind::InboxEvents => 1,
            BoxKind::OutboxCommands => 2,
            BoxKind::InboxCommands => 3,
        }
    }

    /// The dotted configuration key: `events.outbox`, `events.inbox`, `commands.outbox`
    /// or `commands.inbox`.
    #[must_use]
    pub const fn key(self) -> &'static str {
        match self {
            BoxKind::OutboxEvents => "events.outbox",
            BoxKind::InboxEvents => "events.inbox",
            BoxKind::OutboxCommands => "commands.outbox",
            BoxKind::InboxCommands => "commands.inbox",
        }
    }

    /// The group's name in seed 000 (the Java archetype's `application.yml`), accepted
    /// beside [`BoxKind::key`] in files and (as `BANDEJA_APP_EVENTS_OUTBOX_PROCESSOR_<KEY>`)
    /// in the environment: `app.events.outbox-processor`, `app.events.inbox-processor`,
    /// `app.commands.outbox-dispatcher` or `app.commands.inbox-processor`.
    #[must_use]
    pub const fn seed_key(self) -> &'static str {
        match self {
            BoxKind::OutboxEvents => "app.events.outbox-processor",
            BoxKind::InboxEvents => "app.events.inbox-processor",
            BoxKind::OutboxCommands => "app.commands.outbox-dispatcher",
            BoxKind::InboxCommands => "app.commands.inbox-processor",
        }
    }
}

/// A box name that is not one of the four tables.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown box `{}`: expected one of outbox_events, inbox_events, outbox_commands, inbox_commands",
    crate::error::shown(.0)
)]
pub struct UnknownBox(String);

impl UnknownBox {
    /// The name that was not a box.
    #[must_use]
    pub fn value(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for BoxKind {
    type Err = UnknownBox;

    /// Parses a table name (`outbox_events`, …), case-insensitively; `-` may stand for `_`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
        BoxKind::ALL
            .into_iter()
            .find(|b| b.table() == wanted)
            .ok_or_else(|| UnknownBox(s.to_owned()))
    }
}

impl std::fmt::Display for BoxKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.table())
    }
}

/// A message ready to be written to a box: the payload already serialized.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRecord {
    /// Message id.
    pub id: MessageId,
    /// Event or command.
    pub kind: MessageKind,
    /// The tenant that owns the outbox row (for commands: the source tenant).
    pub tenant_id: TenantId,
    /// Stable type name.
    pub message_type: String,
    /// Payload schema version.
    pub schema_version: u32,
    /// Ordering key.
    pub partition_key: Option<String>,
    /// Aggregate type (events).
    pub aggregate_type: Option<String>,
    /// Aggregate id (events).
    pub aggregate_id: Option<String>,
    /// The payload as JSON text.
    pub payload: String,
    /// Headers (correlation, causation, trace, source service, extra).
    pub headers: Headers,
    /// Source tenant (commands).
    pub source_tenant_id: Option<TenantId>,
    /// Target tenant (commands).
    pub target_tenant_id: Option<TenantId>,
    /// Target service (commands).
    pub target_service: Option<String>,
    /// When the message was created.
    pub occurred_at: DateTime<Utc>,
}

impl MessageRecord {
    /// The record of an event. Fails on an empty type, a missing aggregate id (hydrate
    /// inceptive events first), a payload that does not serialize or text no store can keep
    /// ([`MessageRecord::check_storable`]).
    pub fn from_event<T: Payload>(event: &Event<T>) -> Result<Self> {
        let record = Self::from_event_unhydrated(event)?;
        record.require_aggregate_id()?;
        Ok(record)
    }

    /// The record of an event whose aggregate id may still be missing (see
    /// [`RecordedEvents`](crate::emission::RecordedEvents)).
    pub(crate) fn from_event_unhydrated<T: Payload>(event: &Event<T>) -> Result<Self> {
        if !is_usable_type_name(&event.event_type) {
            return Err(MessageError::invalid_type(event.id, &event.event_type).into());
        }
        let payload = serialize(&event.event_type, &event.payload)?;
        let mut headers = event.headers.clone();
        headers.correlation_id = correlation_of(event.correlation_id.as_deref(), event.id);
        headers.causation_id = event.causation_id;
        let record = MessageRecord {
            id: event.id,
            kind: MessageKind::Event,
            tenant_id: event.tenant_id.clone(),
            message_type: event.event_type.clone(),
            schema_version: event.schema_version,
            partition_key: event
                .partition_key
                .clone()
                .or_else(|| event.aggregate_id.clone()),
            aggregate_type: Some(event.aggregate_type.clone()),
            aggregate_id: event.aggregate_id.clone(),
            payload,
            headers,
            source_tenant_id: None,
            target_tenant_id: None,
            target_service: None,
            occurred_at: event.occurred_at,
        };
        record.check_storable()?;
        Ok(record)
    }

    /// Fills in a missing aggregate id (and the partition key that defaults to it).
    pub(crate) fn hydrate_aggregate_id(&mut self, id: &str) {
        if self.aggregate_id.is_none() {
            self.aggregate_id = Some(id.to_owned());
        }
        if self.partition_key.is_none() {
            self.partition_key.clone_from(&self.aggregate_id);
        }
    }

    pub(crate) fn require_aggregate_id(&self) -> Result<(), MessageError> {
        if self.kind == MessageKind::Event && self.aggregate_id.is_none() {
            return Err(MessageError::missing_aggregate_id(
                self.id,
                &self.message_type,
            ));
        }
        self.check_field("aggregate id", self.aggregate_id.as_deref())
    }

    /// The record of a command. Fails on an empty type, a target service that breaks the
    /// rule of service names, a payload that does not serialize or text no store can keep.
    pub fn from_command<T: Payload>(command: &Command<T>) -> Result<Self> {
        let (id, message_type) = (command.id, command.command_type.as_str());
        if !is_usable_type_name(message_type) {
            return Err(MessageError::invalid_type(id, message_type).into());
        }
        if command.target_service.trim().is_empty() {
            return Err(MessageError::missing_target_service(id, message_type).into());
        }
        // The rule every service name follows (`BandejaBuilder::service`): a target that
        // breaks it could never be routed to a service.
        if !is_usable_name(&command.target_service) {
            let target = &command.target_service;
            return Err(MessageError::invalid_target_service(id, message_type, target).into());
        }
        let payload = serialize(&command.command_type, &command.payload)?;
        let mut headers = command.headers.clone();
        headers.correlation_id = correlation_of(command.correlation_id.as_deref(), command.id);
        headers.causation_id = command.causation_id;
        let record = MessageRecord {
            id: command.id,
            kind: MessageKind::Command,
            tenant_id: command.source_tenant_id.clone(),
            message_type: command.command_type.clone(),
            schema_version: command.version,
            partition_key: command.partition_key.clone(),
            aggregate_type: None,
            aggregate_id: None,
            payload,
            headers,
            source_tenant_id: Some(command.source_tenant_id.clone()),
            target_tenant_id: Some(command.target_tenant_id.clone()),
            target_service: Some(command.target_service.clone()),
            occurred_at: command.sent_at,
        };
        record.check_storable()?;
        Ok(record)
    }

    /// The tenant of the inbox row: the target tenant for commands, the same tenant for events.
    pub fn inbox_tenant(&self) -> &TenantId {
        self.target_tenant_id.as_ref().unwrap_or(&self.tenant_id)
    }

    /// Rejects a payload larger than `max_bytes`.
    pub fn check_size(&self, max_bytes: usize) -> Result<(), MessageError> {
        if self.payload.len() > max_bytes {
            let size = self.payload.len();
            return Err(MessageError::too_large(
                self.id,
                &self.message_type,
                size,
                max_bytes,
            ));
        }
        Ok(())
    }

    /// Rejects text that no store can keep: a NUL character (`\0`) in the payload, a
    /// header or a text column. PostgreSQL refuses NUL in `text` and `jsonb`, so a message
    /// holding one could be written on one store and not on another; it is refused on all.
    pub fn check_storable(&self) -> Result<(), MessageError> {
        self.check_field("aggregate id", self.aggregate_id.as_deref())?;
        self.check_field("aggregate type", self.aggregate_type.as_deref())?;
        self.check_field("partition key", self.partition_key.as_deref())?;
        self.check_field("target service", self.target_service.as_deref())?;
        let h = &self.headers;
        self.check_field("correlation id", h.correlation_id.as_deref())?;
        self.check_field("traceparent header", h.traceparent.as_deref())?;
        self.check_field("source service header", h.source_service.as_deref())?;
        for (name, value) in &h.extra {
            if name.contains('\0') {
                return Err(self.nul_error(&format!("header name {name:?}")));
            }
            // The field's label is only built for the error: this runs for every header of
            // every emitted and received message.
            if value.contains('\0') {
                return Err(self.nul_error(&format!("header `{name}`")));
            }
        }
        if json_has_nul(&self.payload) {
            return Err(self.nul_error("payload"));
        }
        Ok(())
    }

    fn check_field(&self, what: &str, value: Option<&str>) -> Result<(), MessageError> {
        match value {
            Some(text) if text.contains('\0') => Err(self.nul_error(what)),
            _ => Ok(()),
        }
    }

    fn nul_error(&self, what: &str) -> MessageError {
        MessageError::nul_character(self.id, &self.message_type, &format!("the {what}"))
    }
}

/// Whether JSON text holds a NUL character: a raw NUL byte, or the escape `\u0000` (not
/// an escaped backslash followed by `u0000`).
pub(crate) fn json_has_nul(json: &str) -> bool {
    let bytes = json.as_bytes();
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if escaped {
            escaped = false;
            if b == b'u' && bytes.get(i + 1..i + 5) == Some(b"0000".as_slice()) {
                return true;
            }
        } else if b == b'\\' {
            escaped = true;
        } else if b == 0 {
            return true;
        }
    }
    false
}

/// A message's correlation id: the one it was given, else its own id (it is the first
/// message of a flow: what it causes inherits this one, see
/// [`HandlerContext::emit`](crate::HandlerContext::emit)).
fn correlation_of(given: Option<&str>, id: MessageId) -> Option<String> {
    Some(given.map_or_else(|| id.to_string(), str::to_owned))
}

fn serialize<T: Payload>(message_type: &str, payload: &T) -> Result<String> {
    serde_json::to_string(payload)
        .map_err(|source| Error::Serialize(SerializeError::new(message_type, source)))
}

/// A row claimed from a box.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// The message.
    pub record: MessageRecord,
    /// Which box it is in.
    pub box_kind: BoxKind,
    /// Monotonic insertion order in its box.
    pub seq: i64,
    /// The subscriber (inbox rows).
    pub subscriber: Option<String>,
    /// Status (PROCESSING right after a claim).
    pub status: MessageStatus,
    /// Failed attempts so far.
    pub retry_count: u32,
    /// The last failure, if any.
    pub last_error: Option<String>,
    /// How many times the transport delivered it (inbox).
    pub delivery_count: u32,
    /// How many times a worker took the row over after the lease of the worker holding
    /// it had run out (that worker stopped: a crash, a kill, a lost connection). Not a
    /// failed attempt: [`retry_count`](Self::retry_count) does not count these.
    pub takeovers: u32,
    /// Set by the claim that took the row over from an expired lease: the claim token of
    /// the worker that held it (which presumably died). `None` for an ordinary claim and in
    /// rows read for inspection.
    pub taken_over_from: Option<String>,
}

/// Why a stored message cannot be turned into its typed envelope.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The payload JSON does not match the type (at the handler's own version).
    #[error("payload of `{message_type}` does not match the type: {source}")]
    Payload {
        /// The message type.
        message_type: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// A payload stored at an older version does not decode, once upcast, as the
    /// handler's version.
    #[error("`{message_type}` stored at schema version {found} does not decode as version {expected} after its upcasters: {source}; register an upcaster (Payload::UPCASTERS) for the step that changed the shape, then retry the message (`bandeja retry`)")]
    Older {
        /// The message type.
        message_type: String,
        /// Version in the message.
        found: u32,
        /// Version of the handler's type.
        expected: u32,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// A payload of a newer version than the handler knows, which does not decode as the
    /// handler's version (it changed more than adding fields).
    #[error("`{message_type}` is at schema version {found}, newer than version {expected} that this handler knows, and does not decode as version {expected}: {source}; deploy a handler that knows version {found}, then retry the message (`bandeja retry`)")]
    Newer {
        /// The message type.
        message_type: String,
        /// Version in the message.
        found: u32,
        /// Version of the handler's type.
        expected: u32,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// An upcaster refused the stored payload.
    #[error("the upcaster of `{message_type}` from version {from} to {to} failed: {source}")]
    Upcast {
        /// The message type.
        message_type: String,
        /// The version the step reads.
        from: u32,
        /// The version the step writes.
        to: u32,
        /// What the upcaster said.
        #[source]
        source: crate::upcast::UpcastError,
    },
}

impl StoredMessage {
    /// Whether this claim took the row over from an expired lease.
    #[must_use]
    pub fn reclaimed(&self) -> bool {
        self.taken_over_from.is_some()
    }

    fn payload<T: Payload>(&self) -> Result<T, DecodeError> {
        crate::upcast::decode(
            &self.record.message_type,
            self.record.schema_version,
            &self.record.payload,
        )
    }

    fn direction(&self) -> Direction {
        if self.box_kind.is_inbox() {
            Direction::Inbound
        } else {
            Direction::Outbound
        }
    }

    /// The typed event.
    pub fn to_event<T: Payload>(&self) -> Result<Event<T>, DecodeError> {
        let r = &self.record;
        Ok(Event {
            id: r.id,
            aggregate_id: r.aggregate_id.clone(),
            aggregate_type: r.aggregate_type.clone().unwrap_or_default(),
            event_type: r.message_type.clone(),
            schema_version: r.schema_version,
            payload: self.payload()?,
            direction: self.direction(),
            status: self.status,
            occurred_at: r.occurred_at,
            correlation_id: r.headers.correlation_id.clone(),
            causation_id: r.headers.causation_id,
            retry_count: self.retry_count,
            tenant_id: r.inbox_tenant().clone(),
            partition_key: r.partition_key.clone(),
            headers: r.headers.clone(),
        })
    }

    /// The typed command.
    pub fn to_command<T: Payload>(&self) -> Result<Command<T>, DecodeError> {
        let r = &self.record;
        Ok(Command {
            id: r.id,
            command_type: r.message_type.clone(),
            payload: self.payload()?,
            version: r.schema_version,
            direction: self.direction(),
            status: self.status,
            sent_at: r.occurred_at,
            source_tenant_id: r
                .source_tenant_id
                .clone()
                .unwrap_or_else(|| r.tenant_id.clone()),
            target_tenant_id: r.inbox_tenant().clone(),
            target_service: r.target_service.clone().unwrap_or_default(),
            retry_count: self.retry_count,
            correlation_id: r.headers.correlation_id.clone(),
            causation_id: r.headers.causation_id,
            partition_key: r.partition_key.clone(),
            headers: r.headers.clone(),
        })
    }
}

/// A claimed inbox row for the crate's unit tests: subscriber `s`, nothing failed yet.
#[cfg(test)]
pub(crate) fn claimed_row_for_tests() -> StoredMessage {
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Tested {
        n: u64,
    }
    impl Payload for Tested {
        const TYPE: &'static str = "test.Tested";
    }
    let event = crate::envelope::Event::new("Tested", "k", Tested { n: 1 });
    StoredMessage {
        record: MessageRecord::from_event(&event).expect("a valid event"),
        box_kind: BoxKind::InboxEvents,
        seq: 1,
        subscriber: Some("s".into()),
        status: MessageStatus::Processing,
        retry_count: 0,
        last_error: None,
        delivery_count: 1,
        takeovers: 0,
        taken_over_from: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Shipped {
        order: u64,
    }
    impl Payload for Shipped {
        const TYPE: &'static str = "shop.Shipped";
    }

    struct Unserializable;
    impl Serialize for Unserializable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("no"))
        }
    }
    impl<'de> Deserialize<'de> for Unserializable {
        fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
            Ok(Unserializable)
        }
    }
    impl Payload for Unserializable {
        const TYPE: &'static str = "bad";
    }

    #[test]
    fn event_record_defaults_the_partition_key_to_the_aggregate_id() {
        let event = Event::new("Order", "42", Shipped { order: 42 }).with_correlation_id("req-1");
        let record = MessageRecord::from_event(&event).unwrap();
        assert_eq!(record.partition_key.as_deref(), Some("42"));
        assert_eq!(record.payload, r#"{"order":42}"#);
        assert_eq!(record.headers.correlation_id.as_deref(), Some("req-1"));
    }

    #[test]
    fn inceptive_event_without_an_id_cannot_be_written() {
        let event = Event::inceptive("Order", Shipped { order: 1 });
        let err = MessageRecord::from_event(&event).unwrap_err();
        assert!(err.to_string().contains("no aggregate id"), "{err}");
    }

    #[test]
    fn unserializable_payload_is_a_clear_error() {
        let event = Event::new("X", "1", Unserializable);
        assert!(matches!(
            MessageRecord::from_event(&event),
            Err(Error::Serialize(_))
        ));
    }

    #[test]
    fn oversized_payload_is_rejected() {
        let record =
            MessageRecord::from_event(&Event::new("Order", "1", Shipped { order: 1 })).unwrap();
        assert!(record.check_size(5).is_err());
        assert!(record.check_size(DEFAULT_MAX_PAYLOAD_BYTES).is_ok());
    }

    #[test]
    fn nul_characters_are_refused_wherever_they_hide() {
        assert!(json_has_nul(r#""a\u0000b""#));
        assert!(json_has_nul("\"a\0b\""));
        assert!(json_has_nul(r#"{"k\u0000":1}"#));
        assert!(
            json_has_nul(r#""\\\u0000""#),
            "an escaped backslash, then a NUL"
        );
        assert!(
            !json_has_nul(r#""\\u0000""#),
            "an escaped backslash, then text"
        );
        assert!(!json_has_nul(r#""\u0001""#));
        assert!(!json_has_nul(r#"{"a":"\\","b":"u0000"}"#));

        let nul = Event::new("Order", "4\u{0}2", Shipped { order: 1 });
        let err = MessageRecord::from_event(&nul).unwrap_err();
        assert!(err.to_string().contains("aggregate id"), "{err}");
        let err = MessageRecord::from_event(&Event::new("Order", "42", Note("a\u{0}".into())))
            .unwrap_err();
        assert!(err.to_string().contains("payload of `shop.Note`"), "{err}");
        let header = Event::new("Order", "42", Shipped { order: 1 }).with_header("x", "\u{0}");
        assert!(MessageRecord::from_event(&header).is_err());
        let mut record =
            MessageRecord::from_event_unhydrated(&Event::inceptive("Order", Shipped { order: 1 }))
                .unwrap();
        record.hydrate_aggregate_id("4\u{0}2");
        assert!(
            record.require_aggregate_id().is_err(),
            "a hydrated id is checked too"
        );
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Note(String);
    impl Payload for Note {
        const TYPE: &'static str = "shop.Note";
    }

    #[test]
    fn stored_message_round_trips_to_the_typed_event_and_reads_a_newer_version_tolerantly() {
        let event = Event::new("Order", "42", Shipped { order: 42 });
        let record = MessageRecord::from_event(&event).unwrap();
        let mut stored = StoredMessage {
            record,
            box_kind: BoxKind::InboxEvents,
            seq: 1,
            subscriber: Some("inventory".into()),
            status: MessageStatus::Processing,
            retry_count: 0,
            last_error: None,
            delivery_count: 1,
            takeovers: 0,
            taken_over_from: None,
        };
        let back: Event<Shipped> = stored.to_event().unwrap();
        assert_eq!(back.payload, Shipped { order: 42 });
        assert_eq!(back.direction, Direction::Inbound);
        assert_eq!(back.id, event.id);
        // A newer version that still decodes is read (tolerant reader); one that does
        // not names both versions.
        stored.record.schema_version = 9;
        assert_eq!(
            stored.to_event::<Shipped>().map(|e| e.payload).ok(),
            Some(Shipped { order: 42 })
        );
        stored.record.payload = r#"{"order":"forty-two"}"#.into();
        assert!(matches!(
            stored.to_event::<Shipped>(),
            Err(DecodeError::Newer {
                found: 9,
                expected: 1,
                ..
            })
        ));
    }
}
