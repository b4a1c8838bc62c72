//! A transport without a broker: `publish` hands each message's encoded body straight to
//! the subscribed [`InboxSink`]s whose addresses match and acknowledges only once they have
//! stored it. It runs the broker path (wire encoding, routing, publish with
//! acknowledgement → reception with dedup → processing) inside one process — for tests, and
//! for several services sharing a process but not a database.
//!
//! Like a broker's durable consumer, one subscription per service receives a message (the
//! first one subscribed); a command whose topic nobody consumes yet is not acknowledged
//! (the dispatcher retries it later), an event nobody subscribes to is dropped. A sink that
//! has not stored a message by the publish deadline leaves it unacknowledged (unavailable).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::record::MessageKind;
use crate::transport::InboxSink;
use crate::transport::{
    Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
};

struct Subscribed {
    id: u64,
    request: SubscribeRequest,
    sink: Arc<dyn InboxSink>,
}

type Sinks = Arc<Mutex<Vec<Subscribed>>>;

/// A subscription as one publish sees it: the addresses it consumes now.
struct Consuming {
    id: u64,
    service: String,
    addresses: Vec<String>,
    sink: Arc<dyn InboxSink>,
}

/// The broker-less transport. Clones share their subscribers.
#[derive(Clone)]
pub struct DirectTransport {
    sinks: Sinks,
    deliveries_per_publish: usize,
}

impl Default for DirectTransport {
    fn default() -> Self {
        DirectTransport::new()
    }
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

    /// For each message, the sink that takes it per consuming service. A subscription
    /// takes the addresses it subscribed to and, like a broker consumer that receives its
    /// service's whole stream, those its service consumes as the database knows them
    /// ([`InboxSink::addresses`]: another process of the service may run a newer version).
    async fn routes(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
    ) -> Vec<Vec<(u64, Arc<dyn InboxSink>)>> {
        // A lock poisoned by a panic elsewhere still holds a consistent list (every change
        // is one push or retain): routing by it beats reporting every event as delivered
        // to nobody.
        let mut consuming: Vec<Consuming> = self
            .sinks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|s| s.request.kind == kind)
            .map(|s| Consuming {
                id: s.id,
                service: s.request.service.clone(),
                addresses: s.request.addresses.clone(),
                sink: s.sink.clone(),
            })
            .collect();
        for c in &mut consuming {
            let lacks_one = messages
                .iter()
                .any(|m| !c.addresses.iter().any(|a| a == m.address));
            if lacks_one {
                if let Ok(Some(more)) = c.sink.addresses(kind).await {
                    c.addresses.extend(more);
                }
            }
        }
        messages
            .iter()
            .map(|message| {
                let mut chosen: Vec<&Consuming> = Vec::new();
                for c in consuming
                    .iter()
                    .filter(|c| c.addresses.iter().any(|a| a == message.address))
                {
                    if !chosen.iter().any(|other| other.service == c.service) {
                        chosen.push(c);
                    }
                }
                chosen.into_iter().map(|c| (c.id, c.sink.clone())).collect()
            })
            .collect()
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
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> Vec<Result<(), TransportError>> {
        if Instant::now() >= deadline {
            return messages
                .iter()
                .map(|_| Err(TransportError::deadline()))
                .collect();
        }
        let routes = self.routes(kind, messages).await;
        let mut results: Vec<Result<(), TransportError>> = messages
            .iter()
            .zip(&routes)
            .map(|(message, sinks)| {
                if sinks.is_empty() && kind == MessageKind::Command {
                    Err(TransportError::unavailable(format!(
                        "no service consumes topic `{}` yet",
                        message.address
                    )))
                } else {
                    Ok(())
                }
            })
            .collect();
        // One call per sink with its messages, in order.
        let mut by_sink: Vec<(u64, Arc<dyn InboxSink>, Vec<usize>)> = Vec::new();
        for (index, sinks) in routes.iter().enumerate() {
            for (id, sink) in sinks {
                match by_sink.iter_mut().find(|(i, _, _)| i == id) {
                    Some((_, _, indexes)) => indexes.push(index),
                    None => by_sink.push((*id, sink.clone(), vec![index])),
                }
            }
        }
        for _ in 0..self.deliveries_per_publish {
            for (_, sink, indexes) in &by_sink {
                let bodies: Vec<&[u8]> = indexes
                    .iter()
                    .map(|i| messages[*i].body.as_slice())
                    .collect();
                let stored = tokio::time::timeout_at(deadline, sink.accept(kind, &bodies)).await;
                for i in indexes {
                    match &stored {
                        Ok(Ok(_)) => {}
                        Ok(Err(error)) => {
                            results[*i] = Err(TransportError::unavailable(error.to_string()));
                        }
                        Err(_) => results[*i] = Err(TransportError::deadline()),
                    }
                }
            }
        }
        results
    }

    async fn subscribe(
        &self,
        request: SubscribeRequest,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        let id = rand::random::<u64>();
        self.sinks
            .lock()
            .map_err(|e| TransportError::unavailable(e.to_string()))?
            .push(Subscribed { id, request, sink });
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
            sinks.retain(|s| s.id != self.id);
        }
    }
}
