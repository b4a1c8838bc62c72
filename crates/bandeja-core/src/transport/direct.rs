//! A transport without a broker: `publish` hands each message straight to every subscribed
//! [`InboxSink`] and acknowledges only once each sink has stored it. It exercises the
//! broker path (publish with acknowledgement → reception with dedup → processing) inside
//! one process — for tests, and for several services sharing a process but not a database.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::reception::InboxSink;
use crate::record::{MessageKind, MessageRecord, StoredMessage};
use crate::transport::{Subscription, Transport, TransportError, TransportErrorKind};

type Sinks = Arc<Mutex<Vec<(u64, MessageKind, Arc<dyn InboxSink>)>>>;

/// The broker-less transport. Clones share their subscribers.
#[derive(Clone, Default)]
pub struct DirectTransport {
    sinks: Sinks,
    deliveries_per_publish: usize,
}

impl DirectTransport {
    /// A transport that delivers each message once.
    pub fn new() -> Self {
        DirectTransport {
            sinks: Sinks::default(),
            deliveries_per_publish: 1,
        }
    }

    /// Delivers every message `n` times (at least once), like a broker redelivering after a
    /// lost acknowledgement: the inbox must absorb the copies.
    #[must_use]
    pub fn redelivering(mut self, n: usize) -> Self {
        self.deliveries_per_publish = n.max(1);
        self
    }

    fn sinks_for(&self, kind: MessageKind) -> Vec<Arc<dyn InboxSink>> {
        self.sinks
            .lock()
            .map(|sinks| {
                sinks
                    .iter()
                    .filter(|(_, k, _)| *k == kind)
                    .map(|(_, _, s)| s.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn unavailable(error: impl std::fmt::Display) -> TransportError {
    TransportError {
        kind: TransportErrorKind::Unavailable,
        source: error.to_string().into(),
    }
}

#[async_trait]
impl Transport for DirectTransport {
    fn name(&self) -> &str {
        "direct"
    }

    async fn publish(
        &self,
        kind: MessageKind,
        messages: &[StoredMessage],
    ) -> Vec<Result<(), TransportError>> {
        let records: Vec<MessageRecord> = messages.iter().map(|m| m.record.clone()).collect();
        let sinks = self.sinks_for(kind);
        for _ in 0..self.deliveries_per_publish {
            for sink in &sinks {
                if let Err(error) = sink.accept(kind, &records).await {
                    return messages.iter().map(|_| Err(unavailable(&error))).collect();
                }
            }
        }
        messages.iter().map(|_| Ok(())).collect()
    }

    async fn subscribe(
        &self,
        kind: MessageKind,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        let id = rand::random::<u64>();
        self.sinks
            .lock()
            .map_err(unavailable)?
            .push((id, kind, sink));
        Ok(Box::new(DirectSubscription {
            id,
            sinks: self.sinks.clone(),
        }))
    }
}

struct DirectSubscription {
    id: u64,
    sinks: Sinks,
}

#[async_trait]
impl Subscription for DirectSubscription {
    async fn stop(self: Box<Self>) {
        if let Ok(mut sinks) = self.sinks.lock() {
            sinks.retain(|(id, _, _)| *id != self.id);
        }
    }
}
