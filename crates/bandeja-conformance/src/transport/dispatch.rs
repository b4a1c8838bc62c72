//! Transport checks of the dispatcher's distrust: a transport that reports fewer results
//! than messages, a claim that fails part way, a batch whose lease ran out before its
//! publish, a publish whose deadline has passed. Each runs against the real store and
//! broker of the suite; only the misbehaviour is injected (a wrapper around the real
//! transport or store).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;

use bandeja_core::envelope::{Event, MessageId};
use bandeja_core::reception::InboxSink;
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord};
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Inspect;
use bandeja_core::tenant::TenantId;
use bandeja_core::testing::eventually;
use bandeja_core::transport::{
    wire, Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
    TransportErrorKind,
};

use super::flaky::{Flaky, Twist};
use super::{completed, emit, rows, stop, wait_rows, Harness, Seen, WAIT};
use crate::fixtures::outbox_of;
use crate::fixtures::Ping;

/// A transport that, on its first call of two messages or more, publishes them all but
/// drops the last result; a later call carrying that message waits until the test opens
/// the gate (so the test sees what the first call's outcome left in the outbox).
struct DropsLastResult {
    inner: Arc<dyn Transport>,
    dropped: Mutex<Option<MessageId>>,
    gate: watch::Receiver<bool>,
}

impl DropsLastResult {
    fn dropped(&self) -> Option<MessageId> {
        self.dropped.lock().ok().and_then(|d| *d)
    }
}

#[async_trait]
impl Transport for DropsLastResult {
    fn name(&self) -> &str {
        "drops-last-result"
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
        let (drop_now, dropped) = match self.dropped.lock() {
            Ok(mut dropped) => match (*dropped, messages.last()) {
                (None, Some(last)) if messages.len() >= 2 => {
                    *dropped = Some(last.record.id);
                    (true, *dropped)
                }
                (already, _) => (false, already),
            },
            Err(_) => (false, None),
        };
        if !drop_now && messages.iter().any(|m| Some(m.record.id) == dropped) {
            let mut gate = self.gate.clone();
            let opened = tokio::time::timeout_at(deadline, gate.wait_for(|open| *open)).await;
            if opened.is_err() {
                return messages
                    .iter()
                    .map(|_| Err(TransportError::deadline()))
                    .collect();
            }
        }
        let mut results = self.inner.publish(kind, messages, deadline).await;
        if drop_now {
            results.pop();
        }
        results
    }
    async fn subscribe(
        &self,
        request: SubscribeRequest,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        self.inner.subscribe(request, sink).await
    }
}

/// A transport whose call returns a result short never gets the unreported message marked
/// COMPLETED: it is released like a broker outage and published again later, and the
/// consumer handles every message once.
pub async fn a_transport_reporting_fewer_results_never_completes_the_unreported<S: Inspect>(
    h: Harness<S>,
) {
    let (orders, inventory) = (h.store().await, h.store().await);
    let seen = Seen::default();
    let consumer = h.service("inventory", &inventory, h.transport().await, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let consumer = consumer.start().await.expect("start the consumer");
    let mut ids = emit(&orders, (0..10).map(|n| (n, format!("k{n}")))).await;
    ids.sort();
    let (open, gate) = watch::channel(false);
    let short = Arc::new(DropsLastResult {
        inner: h.transport().await,
        dropped: Mutex::new(None),
        gate,
    });
    let producer = h.service("orders", &orders, short.clone(), |b| b);
    let producer = producer.start().await.expect("start the producer");
    let outbox = wait_rows(
        &orders,
        BoxKind::OutboxEvents,
        "every reported message COMPLETED",
        |rows| {
            short.dropped().is_some()
                && rows
                    .iter()
                    .filter(|r| r.message.status == MessageStatus::Completed)
                    .count()
                    == 9
        },
    )
    .await;
    let dropped = short.dropped().expect("a result was dropped");
    let unreported = outbox
        .iter()
        .find(|r| r.message.record.id == dropped)
        .expect("the unreported row");
    assert_ne!(
        unreported.message.status,
        MessageStatus::Completed,
        "a message the transport reported nothing for was marked COMPLETED"
    );
    assert_eq!(unreported.message.retry_count, 0, "no retry spent on it");
    open.send_replace(true);
    wait_rows(
        &orders,
        BoxKind::OutboxEvents,
        "the unreported one published later",
        completed(10),
    )
    .await;
    wait_rows(
        &inventory,
        BoxKind::InboxEvents,
        "all handled",
        completed(10),
    )
    .await;
    stop(producer).await;
    stop(consumer).await;
    assert_eq!(seen.ids(), ids, "each event handled once");
}

/// A cycle's claims (one per active tenant) are one unit: when a later one fails, the rows
/// the earlier ones took go back to PENDING at once (not after their lease), without a
/// retry spent, and are published afterwards.
pub async fn a_claim_failing_part_way_releases_what_it_claimed<S: Inspect>(h: Harness<S>) {
    let (real, inventory) = (h.store().await, h.store().await);
    let seen = Seen::default();
    let consumer = h.service("inventory", &inventory, h.transport().await, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let consumer = consumer.start().await.expect("start the consumer");
    let mut ids = Vec::new();
    for tenant in ["acme", "globex"] {
        let tenant = TenantId::new(tenant).expect("tenant");
        let outbox = outbox_of(&real);
        let mut tx = real.begin().await.expect("begin");
        for n in 0..4 {
            let event =
                Event::new("Ping", format!("{tenant}-{n}"), Ping { n }).with_tenant(tenant.clone());
            ids.push(event.id);
            outbox.emit(&mut *tx, &event).await.expect("emit");
        }
        real.commit(tx).await.expect("commit");
    }
    ids.sort();
    let flaky = Flaky::new(real.clone(), Twist::FailPartWay);
    let mut config = h.config();
    // Long enough that only a release (not the lease running out) frees the rows in time.
    config.events_outbox.lock_at_most_for = Duration::from_secs(120);
    let producer = Bandeja::builder(flaky.clone())
        .config(config)
        .service("orders")
        .transport(h.transport().await)
        .build()
        .expect("build the producer");
    let producer = producer.start().await.expect("start the producer");
    eventually(WAIT, || async { flaky.failed().then_some(()) })
        .await
        .expect("a claim failed part way");
    // Later claims wait for the gate: whatever is PROCESSING now is what the failed cycle
    // left. Released at once means well within the 120 s lease.
    eventually(Duration::from_secs(20), || async {
        let rows = rows(flaky.inner(), BoxKind::OutboxEvents).await;
        (rows.len() == 8
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Pending && r.locked_by.is_none()))
        .then_some(())
    })
    .await
    .expect("what the failed cycle claimed is released at once, not after its lease");
    flaky.open();
    let outbox = wait_rows(&real, BoxKind::OutboxEvents, "all published", completed(8)).await;
    wait_rows(
        &inventory,
        BoxKind::InboxEvents,
        "all handled",
        completed(8),
    )
    .await;
    stop(producer).await;
    stop(consumer).await;
    assert!(
        outbox.iter().all(|r| r.message.retry_count == 0),
        "a release spends no retry"
    );
    assert_eq!(seen.ids(), ids, "each event handled once");
}

/// Records, for each publish call, how many claims had returned rows by then.
struct Watching<S> {
    inner: Arc<dyn Transport>,
    store: Flaky<S>,
    calls: Mutex<Vec<usize>>,
}

#[async_trait]
impl<S: Inspect> Transport for Watching<S> {
    fn name(&self) -> &str {
        "watching"
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
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(self.store.claims_with_rows());
        }
        self.inner.publish(kind, messages, deadline).await
    }
    async fn subscribe(
        &self,
        request: SubscribeRequest,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        self.inner.subscribe(request, sink).await
    }
}

/// A batch whose claim answered so late that its lease cannot cover a publish is released
/// without any publish starting; the next claim publishes it, no retry spent.
pub async fn a_batch_whose_lease_is_too_short_is_released_not_published<S: Inspect>(h: Harness<S>) {
    let (real, inventory) = (h.store().await, h.store().await);
    let seen = Seen::default();
    let consumer = h.service("inventory", &inventory, h.transport().await, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let consumer = consumer.start().await.expect("start the consumer");
    let mut ids = emit(&real, (0..5).map(|n| (n, format!("k{n}")))).await;
    ids.sort();
    // A 2 s lease: a publish needs 1 s (half the lease) plus 0.4 s to record the outcome;
    // the first claim answers after 1.2 s, leaving 0.8 s.
    let flaky = Flaky::new(real.clone(), Twist::SlowFirst(Duration::from_millis(1200)));
    let mut config = h.config();
    config.events_outbox.lock_at_most_for = Duration::from_secs(2);
    let watching = Arc::new(Watching {
        inner: h.transport().await,
        store: flaky.clone(),
        calls: Mutex::new(Vec::new()),
    });
    let producer = Bandeja::builder(flaky.clone())
        .config(config)
        .service("orders")
        .transport(watching.clone())
        .build()
        .expect("build the producer");
    let producer = producer.start().await.expect("start the producer");
    let outbox = wait_rows(&real, BoxKind::OutboxEvents, "all published", completed(5)).await;
    wait_rows(
        &inventory,
        BoxKind::InboxEvents,
        "all handled",
        completed(5),
    )
    .await;
    stop(producer).await;
    stop(consumer).await;
    let calls = watching.calls.lock().map(|c| c.clone()).unwrap_or_default();
    assert!(!calls.is_empty(), "published");
    assert!(
        calls.iter().all(|claims| *claims >= 2),
        "no publish started for the batch claimed too late (claims with rows at each publish call: {calls:?})"
    );
    assert!(outbox.iter().all(|r| r.message.retry_count == 0));
    assert_eq!(seen.ids(), ids, "each event handled once");
}

/// A publish called with a deadline already past answers at once, every message
/// unavailable (it is released and published again by a later cycle).
pub async fn a_publish_past_its_deadline_is_unavailable<S: Inspect>(h: Harness<S>) {
    let transport = h.transport().await;
    let records: Vec<MessageRecord> = (0..3)
        .map(|n| MessageRecord::from_event(&Event::new("Ping", "k", Ping { n })).expect("record"))
        .collect();
    let outgoing: Vec<Outgoing<'_>> = records
        .iter()
        .map(|record| Outgoing {
            record,
            address: &record.message_type,
            partition: 0,
            body: wire::encode(record, Some("orders")),
        })
        .collect();
    let started = Instant::now();
    let results = transport
        .publish(MessageKind::Event, &outgoing, started)
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "answered at once, not after {:?}",
        started.elapsed()
    );
    assert_eq!(results.len(), 3, "one result per message");
    for result in &results {
        assert!(
            matches!(result, Err(e) if e.kind() == TransportErrorKind::Unavailable),
            "{result:?}"
        );
    }
}
