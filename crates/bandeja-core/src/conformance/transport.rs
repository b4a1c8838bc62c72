//! The transport conformance suite: what every [`Transport`] must do, checked through the
//! whole path between services that share nothing but the broker (each has its own store):
//! publish with acknowledgement, reception with dedup, redelivery after a consumer that
//! stored but never acknowledged, per-key order, headers kept intact, commands routed by
//! topic, bad bodies stored FAILED without blocking; and the dispatcher's distrust of what
//! it cannot check (a short result list, a claim failing part way, a lease too short for a
//! publish, a deadline already past: [`dispatch`]). Run it with
//! [`transport_conformance_tests!`](crate::transport_conformance_tests).

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;

use super::runtime::{fast_config, Archive};
use super::Ping;
use crate::config::Config;
use crate::envelope::{Command, Event, MessageId};
use crate::error::{Error, HandlerError};
use crate::processing::{CommandHandler, EventHandler, HandlerContext};
use crate::reception::InboxSink;
use crate::record::{BoxKind, MessageKind, MessageRecord};
use crate::runtime::{Bandeja, BandejaBuilder, Running};
use crate::status::MessageStatus;
use crate::store::{Inspect, ReceiveReport, RowView, Store};
use crate::tenant::{self, TenantId};
use crate::testing::eventually;
use crate::transport::{
    wire, Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
};

pub mod blackhole;
mod dispatch;
mod flaky;
mod fleet;

pub use fleet::a_type_only_a_newer_process_subscribes_to_is_stored_for_it;

pub use dispatch::{
    a_batch_whose_lease_is_too_short_is_released_not_published,
    a_claim_failing_part_way_releases_what_it_claimed, a_publish_past_its_deadline_is_unavailable,
    a_transport_reporting_fewer_results_never_completes_the_unreported,
};

/// Generates one `#[tokio::test]` per transport check. `$store` is an async fn returning
/// `(store, guard)` (a fresh migrated store per call: each service of a test gets its own);
/// `$transport` an async fn taking a namespace (`String`) and returning an
/// `Arc<dyn Transport>` whose streams, exchanges and queues are that namespace's, so tests
/// run in parallel. It is called once per service; the services of one test share the
/// namespace.
#[macro_export]
macro_rules! transport_conformance_tests {
    ($store:path, $transport:path) => {
        $crate::transport_conformance_tests!(@tests $store, $transport;
            publishes_and_delivers_once_to_each_subscribing_service,
            a_delivery_stored_but_not_acknowledged_is_absorbed,
            unacknowledged_messages_are_redelivered_after_a_consumer_crash,
            messages_of_one_key_arrive_and_are_handled_in_order,
            headers_arrive_intact,
            commands_reach_the_service_their_topic_names,
            bad_bodies_are_stored_failed_and_do_not_block,
            a_transport_reporting_fewer_results_never_completes_the_unreported,
            a_claim_failing_part_way_releases_what_it_claimed,
            a_batch_whose_lease_is_too_short_is_released_not_published,
            a_publish_past_its_deadline_is_unavailable,
            a_type_only_a_newer_process_subscribes_to_is_stored_for_it,
        );
    };
    (@tests $store:path, $transport:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let harness = $crate::conformance::transport::Harness::new(
                    || -> $crate::conformance::transport::StoreFuture<_> {
                        Box::pin(async {
                            let (store, guard) = $store().await;
                            (store, Box::new(guard) as Box<dyn std::any::Any + Send>)
                        })
                    },
                    |namespace: String| -> $crate::conformance::transport::TransportFuture {
                        Box::pin($transport(namespace))
                    },
                );
                $crate::conformance::transport::$name(harness).await;
            }
        )*
    };
}

const WAIT: Duration = Duration::from_secs(60);

/// A fresh store and what must live as long as it.
pub type StoreFuture<S> = BoxFuture<'static, (S, Box<dyn Any + Send>)>;
/// A transport in a namespace.
pub type TransportFuture = BoxFuture<'static, Arc<dyn Transport>>;

type MakeStore<S> = Box<dyn Fn() -> StoreFuture<S> + Send + Sync>;
type MakeTransport = Box<dyn Fn(String) -> TransportFuture + Send + Sync>;

/// Builds the services of one test: each its own store, all on one broker namespace.
pub struct Harness<S> {
    stores: MakeStore<S>,
    transports: MakeTransport,
    namespace: String,
    guards: Mutex<Vec<Box<dyn Any + Send>>>,
}

impl<S: Inspect> Harness<S> {
    /// A harness with a fresh random namespace.
    pub fn new(
        stores: impl Fn() -> StoreFuture<S> + Send + Sync + 'static,
        transports: impl Fn(String) -> TransportFuture + Send + Sync + 'static,
    ) -> Self {
        Harness {
            stores: Box::new(stores),
            transports: Box::new(transports),
            namespace: format!("t{:08x}", rand::random::<u32>()),
            guards: Mutex::new(Vec::new()),
        }
    }

    /// A fresh store (kept alive until the harness drops).
    pub async fn store(&self) -> S {
        let (store, guard) = (self.stores)().await;
        if let Ok(mut guards) = self.guards.lock() {
            guards.push(guard);
        }
        store
    }

    /// A transport on this test's namespace.
    pub async fn transport(&self) -> Arc<dyn Transport> {
        (self.transports)(self.namespace.clone()).await
    }

    /// The configuration every service of the suite uses: short intervals, and the topics
    /// of the services `billing` and `shipping`.
    pub fn config(&self) -> Config {
        let mut config = fast_config();
        for service in ["billing", "shipping"] {
            config
                .command_topics
                .insert(service.to_owned(), format!("{service}-commands"));
        }
        config
    }

    /// A service on `store` and `transport`.
    pub fn service(
        &self,
        name: &str,
        store: &S,
        transport: Arc<dyn Transport>,
        configure: impl FnOnce(BandejaBuilder<S>) -> BandejaBuilder<S>,
    ) -> Bandeja<S> {
        configure(
            Bandeja::builder(store.clone())
                .config(self.config())
                .service(name)
                .transport(transport),
        )
        .build()
        .expect("build the service")
    }
}

/// What handlers saw: (message id, partition key or subscriber, number).
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(MessageId, String, u64)>>>);

impl Seen {
    fn push(&self, id: MessageId, key: String, n: u64) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push((id, key, n));
        }
    }

    fn all(&self) -> Vec<(MessageId, String, u64)> {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn ids(&self) -> Vec<MessageId> {
        let mut ids: Vec<MessageId> = self.all().into_iter().map(|s| s.0).collect();
        ids.sort();
        ids
    }
}

impl<S: Store> EventHandler<S, Ping> for Seen {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        let key = event.aggregate_id.clone().unwrap_or_default();
        self.push(event.id, key, event.payload.n);
        Ok(())
    }
}

impl<S: Store> CommandHandler<S, Archive> for Seen {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        command: Command<Archive>,
    ) -> Result<(), HandlerError> {
        self.push(command.id, ctx.subscriber().to_owned(), command.payload.n);
        Ok(())
    }
}

async fn rows<S: Inspect>(store: &S, box_kind: BoxKind) -> Vec<RowView> {
    store.rows(box_kind).await.expect("rows")
}

async fn wait_rows<S: Inspect>(
    store: &S,
    box_kind: BoxKind,
    what: &str,
    done: impl Fn(&[RowView]) -> bool,
) -> Vec<RowView> {
    eventually(WAIT, || async {
        let rows = rows(store, box_kind).await;
        done(&rows).then_some(rows)
    })
    .await
    .unwrap_or_else(|e| panic!("{box_kind}: {what}: {e}"))
}

fn completed(n: usize) -> impl Fn(&[RowView]) -> bool {
    move |rows| {
        rows.len() == n
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed)
    }
}

/// Emits `pings` (number, key) in one transaction; returns their ids in order.
async fn emit<S: Store>(
    store: &S,
    pings: impl IntoIterator<Item = (u64, String)>,
) -> Vec<MessageId> {
    let outbox = crate::runtime::Bandeja::builder(store.clone())
        .build()
        .expect("a runtime to emit with")
        .outbox();
    let mut tx = store.begin().await.expect("begin");
    let mut ids = Vec::new();
    for (n, key) in pings {
        let event = Event::new("Ping", key, Ping { n });
        ids.push(event.id);
        outbox.emit(&mut *tx, &event).await.expect("emit");
    }
    store.commit(tx).await.expect("commit");
    ids
}

async fn stop(running: Running) {
    running.shutdown_within(Duration::from_secs(10)).await;
}

/// Every event reaches every subscribing service once; the publisher's outbox rows are
/// COMPLETED only once the broker took them.
pub async fn publishes_and_delivers_once_to_each_subscribing_service<S: Inspect>(h: Harness<S>) {
    let (orders, inventory, billing) = (h.store().await, h.store().await, h.store().await);
    let (seen_inventory, seen_billing) = (Seen::default(), Seen::default());
    let consumers = [
        h.service("inventory", &inventory, h.transport().await, |b| {
            b.on_event::<Ping, _>("stock", seen_inventory.clone())
        }),
        h.service("billing", &billing, h.transport().await, |b| {
            b.on_event::<Ping, _>("invoice", seen_billing.clone())
        }),
    ];
    let mut running = Vec::new();
    for consumer in &consumers {
        running.push(consumer.start().await.expect("start a consumer"));
    }
    let producer = h.service("orders", &orders, h.transport().await, |b| b);
    running.push(producer.start().await.expect("start the producer"));
    let mut ids = emit(&orders, (0..30).map(|n| (n, format!("k{}", n % 5)))).await;
    ids.sort();
    wait_rows(
        &orders,
        BoxKind::OutboxEvents,
        "all published",
        completed(30),
    )
    .await;
    for store in [&inventory, &billing] {
        wait_rows(store, BoxKind::InboxEvents, "all handled", completed(30)).await;
    }
    for running in running {
        stop(running).await;
    }
    assert_eq!(
        seen_inventory.ids(),
        ids,
        "inventory handled each event once"
    );
    assert_eq!(seen_billing.ids(), ids, "billing handled each event once");
}

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
    async fn addresses(&self, kind: MessageKind) -> crate::Result<Option<Vec<String>>> {
        self.inner.addresses(kind).await
    }

    async fn accept(&self, kind: MessageKind, bodies: &[&[u8]]) -> crate::Result<ReceiveReport> {
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
            AfterStore::FailOnce if first => Err(Error::Worker {
                worker: "conformance".into(),
                reason: "crashed after storing, before acknowledging".into(),
            }),
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

/// Messages of one key reach the consumer's inbox in emission order (so its ordered
/// claims hand them to the handler in that order), whatever the partition count.
pub async fn messages_of_one_key_arrive_and_are_handled_in_order<S: Inspect>(h: Harness<S>) {
    let (orders, inventory) = (h.store().await, h.store().await);
    let seen = Seen::default();
    let consumer = h.service("inventory", &inventory, h.transport().await, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let consumer = consumer.start().await.expect("start the consumer");
    let producer = h.service("orders", &orders, h.transport().await, |b| b);
    let producer = producer.start().await.expect("start the producer");
    let keys = ["a", "b", "c", "d"];
    for round in 0..6u64 {
        emit(
            &orders,
            (0..20).map(|i| {
                (
                    round * 20 + i,
                    keys[usize::try_from(i).unwrap_or(0) % keys.len()].to_owned(),
                )
            }),
        )
        .await;
    }
    let inbox = wait_rows(
        &inventory,
        BoxKind::InboxEvents,
        "all handled",
        completed(120),
    )
    .await;
    stop(producer).await;
    stop(consumer).await;
    let mut by_seq = inbox.clone();
    by_seq.sort_by_key(|r| r.message.seq);
    for key in keys {
        let arrived: Vec<u64> = by_seq
            .iter()
            .filter(|r| r.message.record.partition_key.as_deref() == Some(key))
            .map(|r| {
                serde_json::from_str::<Ping>(&r.message.record.payload)
                    .map(|p| p.n)
                    .unwrap_or(u64::MAX)
            })
            .collect();
        assert!(
            arrived.windows(2).all(|w| w[0] < w[1]),
            "key {key} arrived in order: {arrived:?}"
        );
        let handled: Vec<u64> = seen
            .all()
            .into_iter()
            .filter(|s| s.1 == key)
            .map(|s| s.2)
            .collect();
        assert!(
            handled.windows(2).all(|w| w[0] < w[1]),
            "key {key} handled in order: {handled:?}"
        );
        assert_eq!(handled.len(), 30);
    }
}

/// Correlation id, causation id, `traceparent`, application headers and the source
/// service arrive as they left.
pub async fn headers_arrive_intact<S: Inspect>(h: Harness<S>) {
    let (orders, inventory) = (h.store().await, h.store().await);
    let consumer = h.service("inventory", &inventory, h.transport().await, |b| {
        b.on_event::<Ping, _>("stock", Seen::default())
    });
    let consumer = consumer.start().await.expect("start the consumer");
    let producer = h.service("orders", &orders, h.transport().await, |b| b);
    let producer = producer.start().await.expect("start the producer");
    let cause = MessageId::new();
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut event = Event::new("Ping", "k", Ping { n: 1 })
        .with_correlation_id("order-42")
        .with_header("x-note", "ñandú \"quoted\"");
    event.causation_id = Some(cause);
    event.headers.traceparent = Some(traceparent.to_owned());
    producer_emit(&orders, &event).await;
    let inbox = wait_rows(&inventory, BoxKind::InboxEvents, "handled", completed(1)).await;
    stop(producer).await;
    stop(consumer).await;
    let headers = &inbox[0].message.record.headers;
    assert_eq!(headers.correlation_id.as_deref(), Some("order-42"));
    assert_eq!(headers.causation_id, Some(cause));
    assert_eq!(headers.traceparent.as_deref(), Some(traceparent));
    assert_eq!(headers.source_service.as_deref(), Some("orders"));
    assert_eq!(
        headers.extra.get("x-note").map(String::as_str),
        Some("ñandú \"quoted\"")
    );
    assert_eq!(inbox[0].message.record.id, event.id);
}

async fn producer_emit<S: Store>(store: &S, event: &Event<Ping>) {
    let outbox = crate::runtime::Bandeja::builder(store.clone())
        .build()
        .expect("a runtime to emit with")
        .outbox();
    let mut tx = store.begin().await.expect("begin");
    outbox.emit(&mut *tx, event).await.expect("emit");
    store.commit(tx).await.expect("commit");
}

/// A command goes to the topic `commands.topics` names for its target service, and only
/// that service handles it; a command to a service without a topic is refused when sent,
/// and FAILED with the same reason if it reaches the outbox another way.
pub async fn commands_reach_the_service_their_topic_names<S: Inspect>(h: Harness<S>) {
    let (orders, billing, shipping) = (h.store().await, h.store().await, h.store().await);
    let (seen_billing, seen_shipping) = (Seen::default(), Seen::default());
    let mut running = vec![
        h.service("billing", &billing, h.transport().await, |b| {
            b.on_command::<Archive, _>("archiver", seen_billing.clone())
        })
        .start()
        .await
        .expect("start billing"),
        h.service("shipping", &shipping, h.transport().await, |b| {
            b.on_command::<Archive, _>("archiver", seen_shipping.clone())
        })
        .start()
        .await
        .expect("start shipping"),
    ];
    let producer = h.service("orders", &orders, h.transport().await, |b| b);
    running.push(producer.start().await.expect("start the producer"));
    let acme = TenantId::new("acme").expect("tenant");
    let mut ids = Vec::new();
    for n in 0..5 {
        let command = tenant::scope(acme.clone(), async {
            Command::to_self("billing", Archive { n })
        })
        .await
        .expect("command");
        ids.push(command.id);
        producer.send(&command).await.expect("send");
    }
    ids.sort();
    let lost = tenant::scope(acme.clone(), async {
        Command::to_self("nowhere", Archive { n: 9 })
    })
    .await
    .expect("command");
    let refused = producer.send(&lost).await;
    assert!(
        matches!(&refused, Err(Error::NoRoute(e)) if e.service == "nowhere"),
        "{refused:?}"
    );
    let mut tx = orders.begin().await.expect("begin");
    crate::runtime::Bandeja::builder(orders.clone())
        .build()
        .expect("a runtime to emit with")
        .outbox()
        .send(&mut *tx, &lost)
        .await
        .expect("written through the outbox");
    orders.commit(tx).await.expect("commit");
    wait_rows(&billing, BoxKind::InboxCommands, "handled", completed(5)).await;
    let outbox = wait_rows(&orders, BoxKind::OutboxCommands, "settled", |rows| {
        rows.len() == 6
            && rows.iter().all(|r| {
                matches!(
                    r.message.status,
                    MessageStatus::Completed | MessageStatus::Failed
                )
            })
    })
    .await;
    for running in running {
        stop(running).await;
    }
    let failed: Vec<&RowView> = outbox
        .iter()
        .filter(|r| r.message.status == MessageStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].message.record.id, lost.id);
    assert!(failed[0]
        .message
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("[commands.topics] nowhere")));
    assert_eq!(seen_billing.ids(), ids);
    assert!(
        seen_shipping.all().is_empty(),
        "shipping consumes its own topic only"
    );
    assert!(rows(&shipping, BoxKind::InboxCommands).await.is_empty());
}

/// Bodies that are not JSON, lack an id, name a type nobody here handles or a schema
/// version the handler does not read are stored as FAILED inbox rows with the reason, and
/// the message published after them is handled: nothing is lost, nothing blocks.
pub async fn bad_bodies_are_stored_failed_and_do_not_block<S: Inspect>(h: Harness<S>) {
    let inventory = h.store().await;
    let seen = Seen::default();
    let consumer = h.service("inventory", &inventory, h.transport().await, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let consumer = consumer.start().await.expect("start the consumer");
    let transport = h.transport().await;
    // Each body under a record of its own (its own message id: brokers dedup by it).
    let carriers: Vec<MessageRecord> = (10..14)
        .map(|n| MessageRecord::from_event(&Event::new("Ping", "k", Ping { n })).expect("record"))
        .collect();
    let good = MessageRecord::from_event(&Event::new("Ping", "k", Ping { n: 1 })).expect("record");
    let mut unknown =
        MessageRecord::from_event(&Event::new("Ping", "k", Ping { n: 2 })).expect("record");
    unknown.message_type = "conformance.Unknown".into();
    let mut newer =
        MessageRecord::from_event(&Event::new("Ping", "k", Ping { n: 3 })).expect("record");
    newer.schema_version = 9;
    let bodies: Vec<Vec<u8>> = vec![
        b"this is not json".to_vec(),
        br#"{"bandeja":1,"kind":"event","type":"conformance.Ping"}"#.to_vec(),
        wire::encode(&unknown, Some("rogue")),
        wire::encode(&newer, Some("rogue")),
        wire::encode(&good, Some("rogue")),
    ];
    let outgoing: Vec<Outgoing<'_>> = bodies
        .into_iter()
        .zip(carriers.iter().chain(std::iter::once(&good)))
        .map(|(body, record)| Outgoing {
            record,
            address: &good.message_type,
            partition: 0,
            body,
        })
        .collect();
    for (n, outgoing) in outgoing.iter().enumerate() {
        let results = transport
            .publish(
                MessageKind::Event,
                std::slice::from_ref(outgoing),
                Instant::now() + WAIT,
            )
            .await;
        assert!(
            results.iter().all(Result::is_ok),
            "body {n} published: {results:?}"
        );
    }
    let inbox = wait_rows(&inventory, BoxKind::InboxEvents, "all settled", |rows| {
        rows.len() == 5
            && rows.iter().all(|r| {
                matches!(
                    r.message.status,
                    MessageStatus::Completed | MessageStatus::Failed
                )
            })
    })
    .await;
    stop(consumer).await;
    assert_eq!(seen.ids(), vec![good.id], "the good message was handled");
    let reasons: BTreeMap<String, String> = inbox
        .iter()
        .filter(|r| r.message.status == MessageStatus::Failed)
        .map(|r| {
            (
                r.message.record.message_type.clone()
                    + "/"
                    + &r.message.record.schema_version.to_string()
                    + "/"
                    + &r.message
                        .record
                        .payload
                        .chars()
                        .take(20)
                        .collect::<String>(),
                r.message.last_error.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 4, "{reasons:#?}");
    let all = reasons.values().cloned().collect::<Vec<_>>().join("\n");
    for expected in [
        "not JSON",
        "not a bandeja message",
        "no subscriber for event type `conformance.Unknown`",
        "schema version 9",
    ] {
        assert!(all.contains(expected), "a row says {expected:?}:\n{all}");
    }
}
