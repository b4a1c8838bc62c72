//! What a start finds already published is delivered: the streams keep every message
//! whether or not a consumer exists, and a service's first consumers deliver from the
//! oldest message kept. So a process that consumes its own events gets those already in
//! its outbox at start, and a consuming service started after the producer published gets
//! what was published before (unlike RabbitMQ, which drops an event no queue is bound for).
//! Against the local NATS server (a server that is not there fails the test).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::envelope::{Event, MessageId};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Store};
use bandeja_core::testing::eventually;
use bandeja_nats::NatsTransport;
use bandeja_sqlite::SqliteStore;
use common::{fresh_store, namespace, options, Streams};

/// Events emitted before the start: more than one outbox batch.
const EVENTS: u64 = 300;

/// How long the outbox may take to publish them all, and the inbox to handle them all.
const WAIT: Duration = Duration::from_secs(30);

/// The ids of the events handled, one entry per call.
#[derive(Clone, Default)]
struct Handled(Arc<Mutex<Vec<MessageId>>>);

impl Handled {
    fn ids(&self) -> Vec<MessageId> {
        let mut ids = self.0.lock().map(|ids| ids.clone()).unwrap_or_default();
        ids.sort();
        ids
    }
}

impl<S: Store> EventHandler<S, Ping> for Handled {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut ids) = self.0.lock() {
            ids.push(event.id);
        }
        Ok(())
    }
}

async fn transport(prefix: &str) -> NatsTransport {
    NatsTransport::connect(options(prefix))
        .await
        .expect("connect to NATS at 127.0.0.1:4222 (nats-server -js)")
}

/// Writes `EVENTS` pings into the outbox of `bandeja` in one transaction; their ids, sorted.
async fn emit_all(bandeja: &Bandeja<SqliteStore>) -> Vec<MessageId> {
    let store = bandeja.store();
    let mut ids = Vec::new();
    let mut tx = store.begin().await.expect("begin");
    for n in 0..EVENTS {
        let event = Event::new("Ping", format!("k{}", n % 7), Ping { n });
        bandeja.outbox().emit(&mut *tx, &event).await.expect("emit");
        ids.push(event.id);
    }
    store.commit(tx).await.expect("commit");
    ids.sort();
    ids
}

/// Waits until `box_kind` of `store` has `EVENTS` rows, all COMPLETED.
async fn all_completed<S: Inspect>(store: &S, box_kind: BoxKind, what: &str) {
    let total = usize::try_from(EVENTS).expect("a count");
    let done = eventually(WAIT, || async {
        let rows = store.rows(box_kind).await.expect("rows");
        let completed = rows
            .iter()
            .filter(|r| r.message.status == MessageStatus::Completed)
            .count();
        (rows.len() == total && completed == total).then_some(())
    })
    .await;
    if done.is_err() {
        let rows = store.rows(box_kind).await.expect("rows");
        let completed = rows
            .iter()
            .filter(|r| r.message.status == MessageStatus::Completed)
            .count();
        panic!(
            "{what}: {} rows of {total} in {box_kind}, {completed} COMPLETED",
            rows.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_in_the_outbox_at_start_reach_the_process_own_subscription_once() {
    let prefix = namespace();
    let transport = transport(&prefix).await;
    let _cleanup = Streams::of(&transport);
    let (store, _dir) = fresh_store().await;
    let handled = Handled::default();
    let orders = Bandeja::builder(store.clone())
        .config(fast_config())
        .service("orders")
        .transport(Arc::new(transport))
        .on_event::<Ping, _>("audit", handled.clone())
        .build()
        .expect("build");
    let ids = emit_all(&orders).await;
    let running = orders.start().await.expect("start");
    all_completed(&store, BoxKind::OutboxEvents, "published").await;
    all_completed(
        &store,
        BoxKind::InboxEvents,
        "handled by its own subscription",
    )
    .await;
    running.shutdown_within(Duration::from_secs(10)).await;
    assert_eq!(handled.ids(), ids, "each event handled once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_started_after_the_events_were_published_receives_them() {
    let prefix = namespace();
    let producer_transport = transport(&prefix).await;
    let _cleanup = Streams::of(&producer_transport);
    let (orders_store, _orders_dir) = fresh_store().await;
    let orders = Bandeja::builder(orders_store.clone())
        .config(fast_config())
        .service("orders")
        .transport(Arc::new(producer_transport))
        .build()
        .expect("build the producer");
    let ids = emit_all(&orders).await;
    let producer = orders.start().await.expect("start the producer");
    all_completed(&orders_store, BoxKind::OutboxEvents, "published").await;
    // Only now does the consuming service exist on the broker.
    let (audit_store, _audit_dir) = fresh_store().await;
    let handled = Handled::default();
    let audit = Bandeja::builder(audit_store.clone())
        .config(fast_config())
        .service("audit")
        .transport(Arc::new(transport(&prefix).await))
        .on_event::<Ping, _>("log", handled.clone())
        .build()
        .expect("build the consumer");
    let consumer = audit.start().await.expect("start the consumer");
    all_completed(
        &audit_store,
        BoxKind::InboxEvents,
        "received after the fact",
    )
    .await;
    consumer.shutdown_within(Duration::from_secs(10)).await;
    producer.shutdown_within(Duration::from_secs(10)).await;
    assert_eq!(handled.ids(), ids, "each event handled once");
}
