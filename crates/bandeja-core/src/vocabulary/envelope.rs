//! Envelopes: [`Event<T>`] (a fact that happened to an aggregate) and [`Command<T>`] (an
//! intention addressed to a service and tenant), wrapping a user payload with the metadata
//! needed to route, trace and manage its life cycle.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::Result;
use crate::status::MessageStatus;
use crate::tenant::{self, TenantId};

/// A payload type: a stable type name and schema version, independent of its Rust path.
///
/// ```
/// use bandeja_core::Payload;
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct OrderConfirmed { order_id: i64 }
/// impl Payload for OrderConfirmed {
///     const TYPE: &'static str = "shop.order.OrderConfirmed";
///     const VERSION: u32 = 1;
/// }
/// ```
pub trait Payload: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The stable message type name (what handlers subscribe to and what the `message_type`
    /// column holds). Renaming the Rust type must not change it.
    const TYPE: &'static str;
    /// The schema version of this payload shape. Stored messages keep the version they
    /// were written with; a handler reads other versions through [`Self::UPCASTERS`] (older
    /// ones) or tolerantly (newer ones): see [`upcast`](crate::upcast).
    const VERSION: u32 = 1;
    /// The steps that turn the stored JSON of an older version into this one, each from
    /// `N` to `N+1` ([`Upcaster`](crate::upcast::Upcaster)). None by default: a version
    /// that only added optional fields needs no step.
    const UPCASTERS: &'static [crate::upcast::Upcaster] = &[];
}

/// A message id: a UUID v7, so ids sort by creation time.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageId(pub Uuid);

impl MessageId {
    /// A fresh UUID v7.
    pub fn new() -> MessageId {
        MessageId(Uuid::now_v7())
    }
}

impl Default for MessageId {
    fn default() -> Self {
        MessageId::new()
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MessageId({})", self.0)
    }
}

impl std::str::FromStr for MessageId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(MessageId)
    }
}

/// Whether the message is leaving this service (outbox) or arriving (inbox).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Direction {
    /// Emitted by this service.
    Outbound,
    /// Received by this service.
    Inbound,
}

/// Message headers: tracing and provenance, stored as JSON in the `headers` column.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Headers {
    /// Groups every message caused by one original request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// The id of the message whose handling emitted this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<MessageId>,
    /// W3C trace context (`traceparent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The service that emitted the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_service: Option<String>,
    /// Any other application header.
    #[serde(default, flatten)]
    pub extra: BTreeMap<String, String>,
}

/// A domain event: an immutable fact that happened to an aggregate.
///
/// Create it with [`Event::new`] (aggregate id known) or [`Event::inceptive`] (the aggregate
/// gets its id when it is inserted; [`Event::hydrate_aggregate_id`] or the
/// [`RecordedEvents`](crate::emission::RecordedEvents) drain fills it in before the event
/// is written). The metadata fields are set by the infrastructure.
#[derive(Debug, Clone, PartialEq)]
pub struct Event<T> {
    /// Message id (UUID v7).
    pub id: MessageId,
    /// Id of the aggregate the fact belongs to; `None` until hydrated in the inceptive case.
    pub aggregate_id: Option<String>,
    /// Type of that aggregate (`Order`).
    pub aggregate_type: String,
    /// Stable type name (`T::TYPE`).
    pub event_type: String,
    /// Schema version of the payload (`T::VERSION`).
    pub schema_version: u32,
    /// The user's data.
    pub payload: T,
    /// Outbound when emitted here, inbound when received.
    pub direction: Direction,
    /// Status in its box.
    pub status: MessageStatus,
    /// When the fact happened.
    pub occurred_at: DateTime<Utc>,
    /// Correlation id (also in the `headers` column): the flow this message belongs to.
    /// Left `None`, the stored message gets one — its cause's when a handler emits it, else
    /// its own id (it starts a flow) — so every message of a flow can be listed together
    /// (`bandeja messages list --correlation ID`).
    pub correlation_id: Option<String>,
    /// Id of the message that caused this one.
    pub causation_id: Option<MessageId>,
    /// Attempts that failed so far.
    pub retry_count: u32,
    /// The tenant the event belongs to.
    pub tenant_id: TenantId,
    /// Messages with the same key are handled in emission order; defaults to the aggregate id.
    pub partition_key: Option<String>,
    /// Trace context, source service and application headers.
    pub headers: Headers,
}

impl<T: Payload> Event<T> {
    /// An event about an aggregate whose id is known. The tenant is the current one, or
    /// `default` outside a tenant scope.
    pub fn new(
        aggregate_type: impl Into<String>,
        aggregate_id: impl Into<String>,
        payload: T,
    ) -> Self {
        let mut event = Event::inceptive(aggregate_type, payload);
        event.aggregate_id = Some(aggregate_id.into());
        event
    }

    /// An event created before its aggregate has an id (the seed's inceptive case).
    pub fn inceptive(aggregate_type: impl Into<String>, payload: T) -> Self {
        Event {
            id: MessageId::new(),
            aggregate_id: None,
            aggregate_type: aggregate_type.into(),
            event_type: T::TYPE.to_owned(),
            schema_version: T::VERSION,
            payload,
            direction: Direction::Outbound,
            status: MessageStatus::Pending,
            occurred_at: now_micros(),
            correlation_id: None,
            causation_id: None,
            retry_count: 0,
            tenant_id: tenant::current().unwrap_or_else(TenantId::default_tenant),
            partition_key: None,
            headers: Headers::default(),
        }
    }
}

impl<T> Event<T> {
    /// Fills in the aggregate id if it is still missing (an id already set is kept).
    pub fn hydrate_aggregate_id(&mut self, id: impl FnOnce() -> String) {
        if self.aggregate_id.is_none() {
            self.aggregate_id = Some(id());
        }
    }

    /// Sets the correlation id.
    #[must_use]
    pub fn with_correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }

    /// Sets the partition key (default: the aggregate id).
    #[must_use]
    pub fn with_partition_key(mut self, key: impl Into<String>) -> Self {
        self.partition_key = Some(key.into());
        self
    }

    /// Sets the tenant (default: the current tenant).
    #[must_use]
    pub fn with_tenant(mut self, tenant: TenantId) -> Self {
        self.tenant_id = tenant;
        self
    }

    /// Adds an application header.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.extra.insert(name.into(), value.into());
        self
    }
}

/// A command: a request for a target service (in a target tenant) to do something.
#[derive(Debug, Clone, PartialEq)]
pub struct Command<T> {
    /// Message id (UUID v7).
    pub id: MessageId,
    /// Stable type name (`T::TYPE`).
    pub command_type: String,
    /// The user's data.
    pub payload: T,
    /// Schema version of the payload (`T::VERSION`).
    pub version: u32,
    /// Outbound when sent from here, inbound when received.
    pub direction: Direction,
    /// Status in its box.
    pub status: MessageStatus,
    /// When it was sent.
    pub sent_at: DateTime<Utc>,
    /// Tenant of the sender (from the tenant context).
    pub source_tenant_id: TenantId,
    /// Tenant the command is for.
    pub target_tenant_id: TenantId,
    /// Service the command is for (routes through `commands.topics` on a broker).
    pub target_service: String,
    /// Attempts that failed so far.
    pub retry_count: u32,
    /// Correlation id: the flow this command belongs to (`None`: its cause's when a
    /// handler sends it, else its own id, as for [`Event::correlation_id`]).
    pub correlation_id: Option<String>,
    /// Id of the message that caused this one.
    pub causation_id: Option<MessageId>,
    /// Messages with the same key are handled in order; none by default.
    pub partition_key: Option<String>,
    /// Trace context, source service and application headers.
    pub headers: Headers,
}

impl<T: Payload> Command<T> {
    /// A command for another tenant's service. The source tenant is the current one: an
    /// error ([`Error::NoTenant`](crate::error::Error::NoTenant)) outside a tenant scope. The target service follows the
    /// rule of service names (1 to 128 characters, no whitespace or control characters);
    /// a command that breaks it is refused when it is sent.
    pub fn to(
        target_tenant: TenantId,
        target_service: impl Into<String>,
        payload: T,
    ) -> Result<Self> {
        let source = tenant::require_current()?;
        Ok(Command::build(
            source,
            target_tenant,
            target_service.into(),
            payload,
        ))
    }

    /// A command for a service of the current tenant. Error outside a tenant scope.
    pub fn to_self(target_service: impl Into<String>, payload: T) -> Result<Self> {
        let source = tenant::require_current()?;
        Ok(Command::build(
            source.clone(),
            source,
            target_service.into(),
            payload,
        ))
    }

    fn build(source: TenantId, target: TenantId, target_service: String, payload: T) -> Self {
        Command {
            id: MessageId::new(),
            command_type: T::TYPE.to_owned(),
            payload,
            version: T::VERSION,
            direction: Direction::Outbound,
            status: MessageStatus::Pending,
            sent_at: now_micros(),
            source_tenant_id: source,
            target_tenant_id: target,
            target_service,
            retry_count: 0,
            correlation_id: None,
            causation_id: None,
            partition_key: None,
            headers: Headers::default(),
        }
    }
}

impl<T> Command<T> {
    /// Sets the correlation id.
    #[must_use]
    pub fn with_correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }

    /// Sets a partition key: commands with the same key are handled in order.
    #[must_use]
    pub fn with_partition_key(mut self, key: impl Into<String>) -> Self {
        self.partition_key = Some(key.into());
        self
    }

    /// Adds an application header.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.extra.insert(name.into(), value.into());
        self
    }
}

/// Now, at the microsecond precision every store keeps.
pub(crate) fn now_micros() -> DateTime<Utc> {
    use chrono::SubsecRound;
    Utc::now().trunc_subsecs(6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Archive {
        task: u32,
    }
    impl Payload for Archive {
        const TYPE: &'static str = "tasks.ArchiveTask";
        const VERSION: u32 = 2;
    }

    #[test]
    fn ids_are_uuid_v7_and_increase() {
        let a = MessageId::new();
        let b = MessageId::new();
        assert_eq!(a.0.get_version_num(), 7);
        assert!(a < b);
    }

    #[test]
    fn event_takes_type_and_version_from_the_payload_not_the_rust_path() {
        let event = Event::new("Task", "7", Archive { task: 7 });
        assert_eq!(event.event_type, "tasks.ArchiveTask");
        assert_eq!(event.schema_version, 2);
        assert_eq!(event.status, MessageStatus::Pending);
        assert_eq!(event.direction, Direction::Outbound);
        assert_eq!(event.tenant_id, TenantId::default_tenant());
    }

    #[test]
    fn inceptive_event_gets_its_aggregate_id_late_and_keeps_a_set_one() {
        let mut event = Event::inceptive("Task", Archive { task: 1 });
        assert_eq!(event.aggregate_id, None);
        event.hydrate_aggregate_id(|| "42".into());
        assert_eq!(event.aggregate_id.as_deref(), Some("42"));
        event.hydrate_aggregate_id(|| "43".into());
        assert_eq!(event.aggregate_id.as_deref(), Some("42"));
    }

    #[tokio::test]
    async fn commands_need_a_tenant_in_context() {
        assert!(matches!(
            Command::to_self("billing", Archive { task: 1 }),
            Err(crate::error::Error::NoTenant)
        ));
        let acme = TenantId::new("acme").unwrap();
        let globex = TenantId::new("globex").unwrap();
        let (to_self, to_other) = tenant::scope(acme.clone(), async {
            (
                Command::to_self("billing", Archive { task: 1 }).unwrap(),
                Command::to(globex.clone(), "billing", Archive { task: 2 }).unwrap(),
            )
        })
        .await;
        assert_eq!(to_self.source_tenant_id, acme);
        assert_eq!(to_self.target_tenant_id, acme);
        assert_eq!(to_other.source_tenant_id, acme);
        assert_eq!(to_other.target_tenant_id, globex);
        assert_eq!(to_other.command_type, "tasks.ArchiveTask");
        assert_eq!(to_other.version, 2);
    }

    #[test]
    fn type_names_are_validated() {
        assert!(crate::names::is_usable_type_name("a.B"));
        assert!(!crate::names::is_usable_type_name(""));
        assert!(!crate::names::is_usable_type_name("a b"));
        assert!(!crate::names::is_usable_type_name(&"x".repeat(256)));
    }
}
