//! The outbox handle: writes events and commands through the caller's connection or
//! transaction. Every message leaves with a W3C `traceparent` header (continuing the
//! current trace context, see [`telemetry::trace`](crate::telemetry::trace)) and is
//! counted in `bandeja_messages_emitted_total`.

use crate::envelope::{Command, Event, Payload};
use crate::error::Result;
use crate::record::{MessageKind, MessageRecord, DEFAULT_MAX_PAYLOAD_BYTES};
use crate::store::Store;
use crate::telemetry;

/// Writes messages into the outboxes through the caller's transaction.
///
/// Pass `&mut *tx` (your open transaction): the rows commit with your business change, and
/// the dispatcher is woken when that commit happens. After a rollback nothing is delivered.
#[derive(Clone)]
pub struct Outbox<S: Store> {
    store: S,
    max_payload_bytes: usize,
}

impl<S: Store> Outbox<S> {
    /// An outbox handle on `store`, with the default payload limit (1 MiB).
    pub fn new(store: S) -> Self {
        Outbox {
            store,
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
        }
    }

    /// Sets the largest serialized payload accepted (default 1 MiB).
    #[must_use]
    pub fn max_payload_bytes(mut self, limit: usize) -> Self {
        self.max_payload_bytes = limit;
        self
    }

    /// Writes one event into `outbox_events`.
    pub async fn emit<T: Payload>(&self, conn: &mut S::Conn, event: &Event<T>) -> Result<()> {
        self.write(
            conn,
            MessageKind::Event,
            vec![MessageRecord::from_event(event)?],
        )
        .await
    }

    /// Writes events drained from an aggregate ([`RecordedEvents::drain`](crate::emission::RecordedEvents::drain)).
    pub async fn emit_records(
        &self,
        conn: &mut S::Conn,
        records: Vec<MessageRecord>,
    ) -> Result<()> {
        for record in &records {
            record.require_aggregate_id()?;
        }
        self.write(conn, MessageKind::Event, records).await
    }

    /// Writes one command into `outbox_commands`.
    pub async fn send<T: Payload>(&self, conn: &mut S::Conn, command: &Command<T>) -> Result<()> {
        self.write(
            conn,
            MessageKind::Command,
            vec![MessageRecord::from_command(command)?],
        )
        .await
    }

    async fn write(
        &self,
        conn: &mut S::Conn,
        kind: MessageKind,
        mut records: Vec<MessageRecord>,
    ) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        for record in &records {
            record.check_size(self.max_payload_bytes)?;
        }
        prepare(&mut records);
        self.store.insert_outbox(conn, kind, &records).await?;
        telemetry::emitted(kind.outbox(), &records);
        Ok(())
    }
}

/// Gives every record a `traceparent` header (a child of the current trace context, or a
/// new trace), unless the caller set a valid one. Every path into an outbox calls this.
pub(crate) fn prepare(records: &mut [MessageRecord]) {
    let current = telemetry::trace::current();
    for record in records {
        telemetry::trace::stamp(&mut record.headers, current);
    }
}
