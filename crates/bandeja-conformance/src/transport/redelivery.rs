//! Redelivery: a delivery stored but not acknowledged is absorbed, and what a crashed
//! consumer did not acknowledge comes again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use bandeja_core::error::{Error, StoreError, StoreErrorKind};
use bandeja_core::reception::InboxSink;
use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::store::{Inspect, ReceiveReport};
use bandeja_core::testing::eventually;
use bandeja_core::transport::{
    Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
};

use super::{completed, emit, stop, wait_rows, Harness, Seen, WAIT};
use crate::fixtures::Ping;

/// What a wrapped consumer does after storing.
#[derive(Clone, Copy)]
enum AfterStore {
    /// Reports a failure the first time (the acknowledgement never happens), then works.
    FailOnce,
    /// Never returns (a process that died between storing and acknowledging).
    Hang,
}

struct Faulty {
    inner: Arc<dyn InboxSink>,
    after: AfterStore,
    calls: Arc<Mutex<u32>>,
}

#[async_trait]
impl InboxSink for Faulty {
    async fn addresses(&self, kind: MessageKind) -> bandeja_core::Result<Option<Vec<String>>> {
        self.inner.addresses(kind).await
    }

    async fn accept(
        &self,
        kind: MessageKind,
        bodies: &[&[u8]],
    ) -> bandeja_core::Result<ReceiveReport> {
        let report = self.inner.accept(kind, bodies).await?;
        let first = self
            .calls
            .lock()
            .map(|mut c| {
                *c += 1;
                *c == 1
            })
            .unwrap_or(false);
        match self.after {
            AfterStore::FailOnce if first => Err(Error::Store(StoreError::new(
                StoreErrorKind::Transient,
                "conformance",
                "crashed after storing, before acknowledging",
            ))),
            AfterStore::Hang => std::future::pending().await,
            AfterStore::FailOnce => Ok(report),
        }
    }
}

/// A transport whose consumer misbehaves after storing.
struct FaultyTransport {
    inner: Arc<dyn Transport>,
    after: AfterStore,
    calls: Arc<Mutex<u32>>,
}

#[async_trait]
impl Transport for FaultyTransport {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn partitions(&self) -> u16 {
        self.inner.partitions()
    }
    async fn publish(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> Vec<Result<(), TransportError>> {
        self.inner.publish(kind, messages, deadline).await
    }
    async fn subscribe(
        &self,
        request: SubscribeRequest,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        let sink = Arc::new(Faulty {
            inner: sink,
            after: self.after,
            calls: self.calls.clone(),
        });
        self.inner.subscribe(request, sink).await
    }
}

fn faulty(inner: Arc<dyn Transport>, after: AfterStore) -> (Arc<dyn Transport>, Arc<Mutex<u32>>) {
    let calls = Arc::new(Mutex::new(0));
    let transport = Arc::new(FaultyTransport {
        inner,
        after,
        calls: calls.clone(),
    });
    (transport, calls)
}

/// A consumer that stored a batch but failed before acknowledging gets it again; the inbox
/// absorbs the copies (their delivery count goes up) and the handler runs once.
pub async fn a_delivery_stored_but_not_acknowledged_is_absorbed<S: Inspect>(h: Harness<S>) {
    let (orders, inventory) = (h.store().await, h.store().await);
    let seen = Seen::default();
    let (transport, _) = faulty(h.transport().await, AfterStore::FailOnce);
    let consumer = h.service("inventory", &inventory, transport, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let consumer = consumer.start().await.expect("start the consumer");
    let producer = h.service("orders", &orders, h.transport().await, |b| b);
    let producer = producer.start().await.expect("start the producer");
    let mut ids = emit(&orders, (0..10).map(|n| (n, format!("k{n}")))).await;
    ids.sort();
    let done = completed(10);
    wait_rows(
        &inventory,
        BoxKind::InboxEvents,
        "all handled, the unacknowledged batch delivered again",
        |rows| done(rows) && rows.iter().map(|r| r.message.delivery_count).sum::<u32>() > 10,
    )
    .await;
    stop(producer).await;
    stop(consumer).await;
    assert_eq!(
        seen.ids(),
        ids,
        "each event handled once, the copies absorbed"
    );
}

/// A consumer process that stored messages and died before acknowledging: the broker
/// delivers them again to the service's next process, which handles each once.
pub async fn unacknowledged_messages_are_redelivered_after_a_consumer_crash<S: Inspect>(
    h: Harness<S>,
) {
    let (orders, inventory) = (h.store().await, h.store().await);
    let seen = Seen::default();
    let (transport, calls) = faulty(h.transport().await, AfterStore::Hang);
    let crashed = h.service("inventory", &inventory, transport, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let crashed = crashed.start().await.expect("start the first consumer");
    let mut config = h.config();
    config.events_outbox.lock_at_most_for = Duration::from_secs(3);
    let producer = h.service("orders", &orders, h.transport().await, |b| b.config(config));
    let producer = producer.start().await.expect("start the producer");
    let mut ids = emit(&orders, (0..10).map(|n| (n, format!("k{n}")))).await;
    ids.sort();
    eventually(WAIT, || async {
        (calls.lock().map(|c| *c).unwrap_or(0) > 0).then_some(())
    })
    .await
    .expect("the first consumer stored a batch");
    stop(crashed).await;
    let restarted = h.service("inventory", &inventory, h.transport().await, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let restarted = restarted.start().await.expect("start the second consumer");
    let done = completed(10);
    wait_rows(
        &inventory,
        BoxKind::InboxEvents,
        "all handled, what the crashed consumer stored delivered again",
        |rows| done(rows) && rows.iter().any(|r| r.message.delivery_count >= 2),
    )
    .await;
    stop(producer).await;
    stop(restarted).await;
    assert_eq!(
        seen.ids(),
        ids,
        "each event handled once, the copies absorbed"
    );
}
