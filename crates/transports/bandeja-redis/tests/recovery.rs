//! A Redis that keeps nothing on disk loses its streams when it restarts: the entries not
//! delivered yet, and the consumer groups. These tests delete their own keys (never
//! `FLUSHALL`: the server is shared) to do what a restart does, and check what the crate
//! documents: consumers create their groups again by themselves, and replaying the
//! publisher's outbox (`Admin::replay_outbox`, the CLI's `bandeja replay --outbox`) sends
//! the lost messages again, each handled exactly once, the copies of those that had
//! arrived absorbed by the inbox. Against the local Redis (a server that is not there
//! fails the test).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::admin::{Admin, MessageFilter, OutboxReplay};
use bandeja_core::envelope::{Event, MessageId, Payload};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::{Bandeja, Running};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView, Store};
use bandeja_core::testing::eventually;
use bandeja_core::transport::Transport;
use bandeja_sqlite::SqliteStore;

const WAIT: Duration = Duration::from_secs(60);

/// The ids the handler saw, one entry per call.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<MessageId>>>);

impl Seen {
    fn ids(&self) -> Vec<MessageId> {
        let mut ids = self.0.lock().map(|ids| ids.clone()).unwrap_or_default();
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
        if let Ok(mut ids) = self.0.lock() {
            ids.push(event.id);
        }
        Ok(())
    }
}

fn service(store: &SqliteStore, name: &str, transport: Arc<dyn Transport>) -> Bandeja<SqliteStore> {
    Bandeja::builder(store.clone())
        .config(fast_config())
        .service(name)
        .transport(transport)
        .build()
        .expect("build a service")
}

async fn start_inventory(
    store: &SqliteStore,
    transport: Arc<dyn Transport>,
    seen: &Seen,
) -> Running {
    Bandeja::builder(store.clone())
        .config(fast_config())
        .service("inventory")
        .transport(transport)
        .on_event::<Ping, _>("stock", seen.clone())
        .build()
        .expect("build inventory")
        .start()
        .await
        .expect("start inventory")
}

/// Emits `range` as pings of keys of their own; returns their ids.
async fn emit(orders: &Bandeja<SqliteStore>, range: std::ops::Range<u64>) -> Vec<MessageId> {
    let mut ids = Vec::new();
    for n in range {
        let event = Event::new("Ping", format!("k{n}"), Ping { n });
        ids.push(event.id);
        orders.emit(&event).await.expect("emit");
    }
    ids
}

/// Waits until `store`'s `box_kind` has `n` rows, all COMPLETED.
async fn completed(store: &SqliteStore, box_kind: BoxKind, n: usize) -> Vec<RowView> {
    eventually(WAIT, || async {
        let rows = store.rows(box_kind).await.expect("rows");
        let done = rows.len() == n
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed);
        done.then_some(rows)
    })
    .await
    .unwrap_or_else(|e| panic!("{box_kind}: {n} rows COMPLETED: {e}"))
}

/// Messages published while the consumer was stopped are lost with the streams (a
/// restart); the consumer starts again on empty streams, and an outbox replay of the time
/// window sends everything again: the lost ones are handled once, the five that had been
/// handled before are absorbed (delivered twice, handled once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_lost_with_the_streams_are_recovered_by_replaying_the_outbox() {
    let prefix = common::namespace();
    let (orders_store, _orders_dir) = common::fresh_store().await;
    let (inventory_store, _inventory_dir) = common::fresh_store().await;
    let seen = Seen::default();
    let since = chrono::Utc::now() - chrono::Duration::seconds(1);
    let consumer = start_inventory(&inventory_store, common::transport(&prefix).await, &seen).await;
    let orders = service(&orders_store, "orders", common::transport(&prefix).await);
    let producer = orders.start().await.expect("start orders");

    let mut ids = emit(&orders, 0..5).await;
    completed(&inventory_store, BoxKind::InboxEvents, 5).await;
    consumer.shutdown_within(Duration::from_secs(10)).await;
    ids.extend(emit(&orders, 5..10).await);
    completed(&orders_store, BoxKind::OutboxEvents, 10).await;

    // The restart: every key of the system gone, the five undelivered entries with them.
    let deleted = common::delete_keys(&prefix).await;
    assert!(deleted >= 4, "the streams existed: {deleted} keys");

    let consumer = start_inventory(&inventory_store, common::transport(&prefix).await, &seen).await;
    let replay = OutboxReplay::new(MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        message_type: Some(Ping::TYPE.to_owned()),
        since: Some(since),
        ..MessageFilter::default()
    });
    assert_eq!(
        orders_store.replay_outbox(&replay).await.expect("replay"),
        10,
        "every COMPLETED row of the window goes back to PENDING"
    );
    completed(&orders_store, BoxKind::OutboxEvents, 10).await;
    let inbox = eventually(WAIT, || async {
        let rows = inventory_store
            .rows(BoxKind::InboxEvents)
            .await
            .expect("rows");
        let done = rows.len() == 10
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed)
            && rows
                .iter()
                .filter(|r| r.message.delivery_count == 2)
                .count()
                == 5;
        done.then_some(rows)
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "the replayed messages arrived: {e}; handled {:?}",
            seen.ids()
        )
    });
    producer.shutdown_within(Duration::from_secs(10)).await;
    consumer.shutdown_within(Duration::from_secs(10)).await;

    ids.sort();
    assert_eq!(seen.ids(), ids, "each message handled exactly once");
    let absorbed: Vec<MessageId> = inbox
        .iter()
        .filter(|r| r.message.delivery_count == 2)
        .map(|r| r.message.record.id)
        .collect();
    assert!(
        absorbed.iter().all(|id| ids[..].contains(id)),
        "the copies are of messages handled before the loss"
    );
}

/// The streams (and with them the groups) vanish under a running consumer: it creates
/// its group again by itself and receives what is published afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_consumer_whose_streams_vanish_creates_its_group_again() {
    let prefix = common::namespace();
    let (orders_store, _orders_dir) = common::fresh_store().await;
    let (inventory_store, _inventory_dir) = common::fresh_store().await;
    let seen = Seen::default();
    let consumer = start_inventory(&inventory_store, common::transport(&prefix).await, &seen).await;
    let orders = service(&orders_store, "orders", common::transport(&prefix).await);
    let producer = orders.start().await.expect("start orders");

    let mut ids = emit(&orders, 0..3).await;
    completed(&inventory_store, BoxKind::InboxEvents, 3).await;
    assert!(common::delete_keys(&prefix).await >= 4);
    ids.extend(emit(&orders, 3..6).await);
    completed(&inventory_store, BoxKind::InboxEvents, 6).await;
    producer.shutdown_within(Duration::from_secs(10)).await;
    consumer.shutdown_within(Duration::from_secs(10)).await;

    ids.sort();
    assert_eq!(seen.ids(), ids, "each message handled once");
}
