//! Events an aggregate has recorded but not yet written: the transient collection the seed's
//! aggregates keep, drained into the outbox inside the save transaction.

use crate::envelope::{Event, Payload};
use crate::error::Result;
use crate::record::MessageRecord;

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
#[derive(Debug, Default, Clone)]
pub struct RecordedEvents {
    pending: Vec<MessageRecord>,
}

impl RecordedEvents {
    /// Records an event (its payload is serialized now; an error means nothing was recorded).
    pub fn record<T: Payload>(&mut self, event: Event<T>) -> Result<()> {
        self.pending
            .push(MessageRecord::from_event_unhydrated(&event)?);
        Ok(())
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
        let mut records = std::mem::take(&mut self.pending);
        for record in &mut records {
            record.hydrate_aggregate_id(aggregate_id);
            record.require_aggregate_id()?;
        }
        Ok(records)
    }
}
