//! A process that consumes its own events gets every one of them, also those already in its
//! outbox when it starts: `Bandeja::start` has its queues declared and bound before its
//! outbox worker publishes anything. RabbitMQ drops an event published before a queue is
//! bound for it, while the publisher confirm still makes its outbox row COMPLETED; with the
//! queues declared after the dispatcher started, the first batch was lost that way. Against
//! the local RabbitMQ (a broker that is not there fails the test).

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

/// Events in the outbox before the start: more than one outbox batch.
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

/// How many rows of `box_kind` there are, and how many of them are COMPLETED.
async fn counts<S: Inspect>(store: &S, box_kind: BoxKind) -> (usize, usize) {
    let rows = store.rows(box_kind).await.expect("rows");
    let completed = rows
        .iter()
        .filter(|r| r.message.status == MessageStatus::Completed)
        .count();
    (rows.len(), completed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_in_the_outbox_at_start_reach_the_process_own_subscription_once() {
    let namespace = common::namespace();
    let transport = common::transport(&namespace).await;
    let (store, _dir) = common::fresh_store().await;
    let handled = Handled::default();
    let orders = Bandeja::builder(store.clone())
        .config(fast_config())
        .service("orders")
        .transport(Arc::new(transport))
        .on_event::<Ping, _>("audit", handled.clone())
        .build()
        .expect("build");
    // Committed before the start, as by a previous run or by the application before it
    // starts the workers.
    let mut ids = Vec::new();
    let mut tx = store.begin().await.expect("begin");
    for n in 0..EVENTS {
        let event = Event::new("Ping", format!("k{}", n % 7), Ping { n });
        orders.outbox().emit(&mut *tx, &event).await.expect("emit");
        ids.push(event.id);
    }
    store.commit(tx).await.expect("commit");
    ids.sort();
    let total = usize::try_from(EVENTS).expect("a count");

    let running = orders.start().await.expect("start");
    let published = eventually(WAIT, || async {
        let (rows, completed) = counts(&store, BoxKind::OutboxEvents).await;
        (rows == total && completed == total).then_some(())
    })
    .await;
    let inbox = eventually(WAIT, || async {
        let (rows, completed) = counts(&store, BoxKind::InboxEvents).await;
        (rows == total && completed == total).then_some(())
    })
    .await;
    let (outbox_rows, outbox_completed) = counts(&store, BoxKind::OutboxEvents).await;
    let (inbox_rows, inbox_completed) = counts(&store, BoxKind::InboxEvents).await;
    running.shutdown_within(Duration::from_secs(10)).await;
    assert!(
        published.is_ok(),
        "every outbox row published: {outbox_completed} of {outbox_rows} COMPLETED"
    );
    assert!(
        inbox.is_ok(),
        "every published event reaches this process's own subscription: {inbox_rows} of \
         {total} in the inbox ({inbox_completed} COMPLETED); the others were published \
         before its queues were bound, and RabbitMQ dropped them"
    );
    assert_eq!(handled.ids(), ids, "each event handled once");
}
