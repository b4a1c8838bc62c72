//! Events an aggregate has recorded but not yet written: the transient collection the seed's
//! aggregates keep, drained into the outbox inside the save transaction.

use std::fmt;
use std::sync::Arc;

use crate::envelope::{Event, MessageId, Payload};
use crate::error::Result;
use crate::record::MessageRecord;
use crate::tenant::{self, TenantId};

/// Builds the record of an event whose payload needs the aggregate id.
type Deferred = Arc<dyn Fn(&str) -> Result<MessageRecord> + Send + Sync>;

/// An event waiting for the drain.
#[derive(Clone)]
enum Pending {
    /// Payload already serialized; the aggregate id may still be missing.
    Ready(Box<MessageRecord>),
    /// Payload built from the aggregate id at drain time.
    Deferred(Deferred),
}

/// The events recorded on an aggregate since it was loaded.
///
/// ```
/// use bandeja_core::{emission::RecordedEvents, Event, Payload};
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Placed { customer: String }
/// impl Payload for Placed { const TYPE: &'static str = "shop.Placed"; }
///
/// let mut events = RecordedEvents::default();
/// // Created before the order has an id (the inceptive case)...
/// events.record(Event::inceptive("Order", Placed { customer: "alice".into() })).unwrap();
/// // ...and hydrated with the id the INSERT generated, when drained into the outbox.
/// let records = events.drain("42").unwrap();
/// assert_eq!(records[0].aggregate_id.as_deref(), Some("42"));
/// assert!(events.is_empty());
/// ```
#[derive(Default, Clone)]
pub struct RecordedEvents {
    pending: Vec<Pending>,
}

impl fmt::Debug for RecordedEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordedEvents")
            .field("len", &self.pending.len())
            .finish()
    }
}

impl RecordedEvents {
    /// Records an event (its payload is serialized now; an error means nothing was recorded).
    pub fn record<T: Payload>(&mut self, event: Event<T>) -> Result<()> {
        self.pending.push(Pending::Ready(Box::new(
            MessageRecord::from_event_unhydrated(&event)?,
        )));
        Ok(())
    }

    /// Records an event whose payload needs the aggregate's id (an order number in the
    /// payload, say): `build` receives the id at drain time, after the INSERT generated it.
    /// The event's id, time and tenant are fixed now, when the fact happens.
    ///
    /// ```
    /// use bandeja_core::{emission::RecordedEvents, Payload};
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Confirmed { order_id: String }
    /// impl Payload for Confirmed { const TYPE: &'static str = "shop.Confirmed"; }
    ///
    /// let mut events = RecordedEvents::default();
    /// events.record_with("Order", |id| Confirmed { order_id: id.to_owned() });
    /// let records = events.drain("42").unwrap();
    /// assert_eq!(records[0].payload, r#"{"order_id":"42"}"#);
    /// ```
    pub fn record_with<T, F>(&mut self, aggregate_type: &str, build: F)
    where
        T: Payload,
        F: Fn(&str) -> T + Send + Sync + 'static,
    {
        let id = MessageId::new();
        let occurred_at = crate::envelope::now_micros();
        let tenant = tenant::current().unwrap_or_else(TenantId::default_tenant);
        let aggregate_type = aggregate_type.to_owned();
        self.pending
            .push(Pending::Deferred(Arc::new(move |aggregate_id: &str| {
                let mut event =
                    Event::new(aggregate_type.clone(), aggregate_id, build(aggregate_id));
                event.id = id;
                event.occurred_at = occurred_at;
                event.tenant_id = tenant.clone();
                MessageRecord::from_event(&event)
            })));
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// How many events are waiting.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Takes every recorded event, filling in `aggregate_id` where it is still missing.
    pub fn drain(&mut self, aggregate_id: &str) -> Result<Vec<MessageRecord>> {
        let pending = std::mem::take(&mut self.pending);
        let mut records = Vec::with_capacity(pending.len());
        for event in pending {
            let mut record = match event {
                Pending::Ready(record) => *record,
                Pending::Deferred(build) => build(aggregate_id)?,
            };
            record.hydrate_aggregate_id(aggregate_id);
            record.require_aggregate_id()?;
            records.push(record);
        }
        Ok(records)
    }
}
