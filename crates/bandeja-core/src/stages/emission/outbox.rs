//! The outbox handle of a runtime ([`Bandeja::outbox`](crate::Bandeja::outbox)): writes
//! events and commands through the caller's connection or transaction, with the runtime's
//! rules (its payload limit, and with a broker its routes). Every message leaves with a
//! W3C `traceparent` header (continuing the current trace context, see
//! [`telemetry::trace`](crate::telemetry::trace)) and is counted in
//! `bandeja_messages_emitted_total`.

use std::collections::HashSet;
use std::sync::Arc;

use crate::envelope::{Command, Event, Payload};
use crate::error::{Result, StoreError, StoreErrorKind};
use crate::record::{MessageKind, MessageRecord};
use crate::store::Store;
use crate::telemetry;
use crate::transport::routing::{check_outgoing, Routing};

/// Writes messages into the outboxes through the caller's transaction: get it from the
/// runtime with [`Bandeja::outbox`](crate::Bandeja::outbox) (cheap to clone, keep one in
/// your application state).
///
/// Pass your open transaction as `&mut *tx`: the rows commit with your business change,
/// and the dispatcher is woken when that commit happens. After a rollback nothing is
/// delivered. Before writing, every message is checked against the runtime's rules: a
/// payload over [`BandejaBuilder::max_payload_bytes`](crate::BandejaBuilder::max_payload_bytes)
/// and, with a broker transport, a command whose target service has no topic in
/// `commands.topics` are refused with an error, and nothing is written.
#[derive(Clone)]
pub struct Outbox<S: Store> {
    store: S,
    max_payload_bytes: usize,
    /// Shared with the runtime: an outbox is made per emission, so it only counts a reference.
    routing: Option<Arc<Routing>>,
}

impl<S: Store> Outbox<S> {
    /// The outbox of a runtime on `store` with these rules.
    pub(crate) fn new(store: S, max_payload_bytes: usize, routing: Option<Arc<Routing>>) -> Self {
        Outbox {
            store,
            max_payload_bytes,
            routing,
        }
    }

    /// The largest serialized payload this outbox accepts, in bytes (the runtime's
    /// [`BandejaBuilder::max_payload_bytes`](crate::BandejaBuilder::max_payload_bytes)).
    pub fn max_payload_bytes(&self) -> usize {
        self.max_payload_bytes
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

    /// Writes commands (built records: a saga's next step) into `outbox_commands`.
    pub(crate) async fn send_records(
        &self,
        conn: &mut S::Conn,
        records: Vec<MessageRecord>,
    ) -> Result<()> {
        self.write(conn, MessageKind::Command, records).await
    }

    /// Writes one message in a transaction of its own, then wakes the dispatcher
    /// ([`Bandeja::emit`](crate::Bandeja::emit), [`Bandeja::send`](crate::Bandeja::send)).
    pub(crate) async fn write_alone(&self, kind: MessageKind, record: MessageRecord) -> Result<()> {
        let mut tx = self.store.begin().await?;
        self.write(&mut *tx, kind, vec![record]).await?;
        self.store.commit(tx).await?;
        crate::fault::point("after-emit-commit");
        self.store.wakers().wake(kind.outbox());
        Ok(())
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
        // A single record (the common emit) needs no set to find a repeated id.
        let mut ids = (records.len() > 1).then(|| HashSet::with_capacity(records.len()));
        for record in &records {
            check_outgoing(
                record,
                self.max_payload_bytes,
                self.routing.as_deref(),
                |r| ids.as_mut().is_some_and(|ids| !ids.insert(r.id)),
            )?;
        }
        prepare(&mut records);
        self.store
            .insert_outbox(conn, kind, &records)
            .await
            .map_err(|e| explain_duplicate(e, kind, &records))?;
        telemetry::emitted(kind.outbox(), &records);
        Ok(())
    }
}

/// A message id that is already in the outbox: the source of a `Duplicate` store error
/// raised by an outbox insert, naming the id and what to do.
#[derive(Debug, thiserror::Error)]
#[error(
    "{which} is already in {table}: give every message a fresh id (`MessageId::new()`, as \
     `Event::new` does); emitting a message again is not a way to retry it, the dispatcher \
     retries by itself"
)]
struct AlreadyInOutbox {
    which: String,
    table: &'static str,
    #[source]
    source: crate::error::BoxError,
}

/// Turns the `Duplicate` error of an outbox insert into one that names the message id
/// (for a batch: its ids, since the database does not say which) and what to do. The kind
/// stays `Duplicate`, the driver's error stays the source.
pub(crate) fn explain_duplicate(
    error: StoreError,
    kind: MessageKind,
    records: &[MessageRecord],
) -> StoreError {
    if error.kind() != StoreErrorKind::Duplicate {
        return error;
    }
    let which = match records {
        [record] => format!("message id {}", record.id),
        _ => {
            let shown: Vec<String> = records.iter().take(3).map(|r| r.id.to_string()).collect();
            let more = if records.len() > shown.len() {
                ", …"
            } else {
                ""
            };
            format!(
                "one of the {} message ids of this emission ({}{more})",
                records.len(),
                shown.join(", ")
            )
        }
    };
    let operation = error.operation();
    StoreError::new(
        StoreErrorKind::Duplicate,
        operation,
        AlreadyInOutbox {
            which,
            table: kind.outbox().table(),
            source: error.into_inner(),
        },
    )
}

/// Gives every record a `traceparent` header (a child of the current trace context, or a
/// new trace), unless the caller set a valid one. Every path into an outbox calls this.
pub(crate) fn prepare(records: &mut [MessageRecord]) {
    let current = telemetry::trace::current();
    for record in records {
        telemetry::trace::stamp(&mut record.headers, current);
    }
}
