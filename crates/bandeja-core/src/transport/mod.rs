//! Stage 3, transport: the port a broker adapter implements, and the in-process default.
//!
//! With the in-process transport (the default) the outbox worker moves each outbox row into
//! the inbox, one row per subscriber, and marks it COMPLETED in one transaction: no
//! serialization hop, no broker. A broker adapter instead publishes with acknowledgements
//! and feeds received messages to an [`InboxSink`](crate::reception::InboxSink), which
//! stores them (dedup by id) before the adapter acknowledges the broker.

use std::sync::Arc;

use async_trait::async_trait;

pub mod direct;

use crate::error::BoxError;
use crate::reception::InboxSink;
use crate::record::{MessageKind, StoredMessage};

/// Why a publish did not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The broker is unreachable or did not acknowledge in time: retry later without
    /// spending the message's retries.
    Unavailable,
    /// The broker refused this message (too large, no route...): counts as a failed attempt.
    Rejected,
}

/// A publish or subscription failure.
#[derive(Debug, thiserror::Error)]
#[error("transport {kind:?}: {source}")]
pub struct TransportError {
    /// The kind, so the worker decides without parsing text.
    pub kind: TransportErrorKind,
    /// The broker client's error.
    #[source]
    pub source: BoxError,
}

/// A running subscription; dropping it does not stop it, [`Subscription::stop`] does.
#[async_trait]
pub trait Subscription: Send {
    /// Stops consuming (unacknowledged messages are redelivered by the broker later).
    async fn stop(self: Box<Self>);
}

/// A message broker adapter.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// A short name for logs (`nats`, `amqp`).
    fn name(&self) -> &str;

    /// Publishes a batch; one result per message, in order. `Ok` only once the broker
    /// acknowledged the message.
    async fn publish(
        &self,
        kind: MessageKind,
        messages: &[StoredMessage],
    ) -> Vec<Result<(), TransportError>>;

    /// Starts consuming messages of `kind` addressed to this service, handing each to `sink`
    /// and acknowledging the broker only when the sink returned `Ok`.
    async fn subscribe(
        &self,
        kind: MessageKind,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError>;
}
