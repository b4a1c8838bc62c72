//! Stage 3, transport: the port a broker adapter implements, and the in-process default.
//!
//! With the in-process transport (the default) the outbox worker moves each outbox row into
//! the inbox, one row per subscriber, and marks it COMPLETED in one transaction: no
//! serialization hop, no broker. A broker adapter instead publishes with acknowledgements
//! and feeds received messages to an [`InboxSink`], which
//! stores them (dedup by id) before the adapter acknowledges the broker.
//!
//! What every broker adapter shares lives here: the [`wire`] format, the [`routing`] of a
//! message to an address and a partition, and the [`direct`] transport that runs the same
//! path without a broker. The contract an adapter must meet is the transport conformance
//! suite (`bandeja_conformance::transport`).

use std::sync::Arc;

use async_trait::async_trait;
pub use tokio::time::Instant;

pub mod backoff;
pub mod direct;
pub mod routing;
mod sink;
pub mod wire;

pub use sink::InboxSink;

use crate::record::{MessageKind, MessageRecord};

pub use crate::error::{TransportError, TransportErrorKind};

/// One message to publish: the record (for the broker's own headers: message id for
/// dedup, type, correlation id, `traceparent`), where it goes and its encoded body.
#[derive(Debug, Clone)]
pub struct Outgoing<'a> {
    /// The message.
    pub record: &'a MessageRecord,
    /// An event's type, or a command's topic (see [`routing`]).
    pub address: &'a str,
    /// Its partition, below [`Transport::partitions`].
    pub partition: u16,
    /// The [`wire`] encoding of the message.
    pub body: Vec<u8>,
}

/// What a service consumes from the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscribeRequest {
    /// Events or commands.
    pub kind: MessageKind,
    /// The consuming service (durable consumers and queues are named after it, so the
    /// processes of one service share them).
    pub service: String,
    /// The addresses to consume: the event types this service has subscribers for, or the
    /// one topic its commands arrive on.
    pub addresses: Vec<String>,
    /// How many messages to take from the broker and store in one inbox transaction (and
    /// to have unacknowledged at once, per partition).
    pub batch_size: usize,
}

/// A running subscription; dropping it does not stop it, [`Subscription::stop`] does.
#[async_trait]
pub trait Subscription: Send {
    /// Stops consuming (unacknowledged messages are redelivered by the broker later).
    async fn stop(self: Box<Self>);
}

/// A message broker adapter.
///
/// Publishing: `Ok` only once the broker acknowledged the message (persisted), and never
/// later than the `deadline` the dispatcher passes: it is shorter than what is left of the
/// lease of the rows being published, so a result arrives while the rows are still this
/// process's. A message not acknowledged by then is `Err` of kind
/// [`TransportErrorKind::Unavailable`] (see [`PublishDeadline`]); the dispatcher releases
/// it and publishes it again later (brokers drop the copy by message id, the receiving
/// inbox dedups). The dispatcher checks what it gets: a missing result counts as
/// unavailable, never as published. Receiving:
/// hand bodies to the [`InboxSink`] and acknowledge only what it stored; keep each
/// partition in order (never store a later message of a partition before an earlier one).
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// A short name for logs (`nats`, `amqp`).
    fn name(&self) -> &str;

    /// How many partitions each address is split into (publishers and consumers of one
    /// system must agree). Default 1.
    fn partitions(&self) -> u16 {
        1
    }

    /// Publishes a batch; one result per message, in order, returned by `deadline` (waiting
    /// for an acknowledgement past it is the dispatcher's loss: it gives up on the whole
    /// call shortly after and counts every message of it unavailable). A deadline already
    /// past: publish nothing, answer unavailable.
    async fn publish(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> Vec<Result<(), TransportError>>;

    /// Declares what the subscription needs (durably, idempotently) and starts consuming,
    /// handing bodies to `sink` and acknowledging the broker only when it returned `Ok`.
    /// Returns only once the subscription is set up on the broker (queues declared and
    /// bound, consumers created): the runtime starts its workers, the outbox dispatcher
    /// among them, after every `subscribe` returned, so nothing this process publishes to
    /// its own subscriptions can be published before they exist.
    async fn subscribe(
        &self,
        request: SubscribeRequest,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError>;
}

/// The broker did not acknowledge a message before the publish deadline (or the deadline
/// had passed before it could be sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no broker acknowledgement before the publish deadline (kept shorter than the rows' lease): the message goes back to PENDING and is published again; if this repeats, check the broker's health or raise `lock-at-most-for`")]
pub struct PublishDeadline;

impl TransportError {
    /// A message not acknowledged before the publish deadline (unavailable).
    pub fn deadline() -> Self {
        TransportError::unavailable(PublishDeadline)
    }
}
