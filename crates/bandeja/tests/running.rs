//! What dropping `Running` does: the workers are told to stop and end gracefully (a handler
//! in flight finishes and its row is COMPLETED, nothing new is claimed), and the broker
//! subscriptions are stopped. Before, the drop aborted the workers mid-handler (the row
//! stayed PROCESSING until its lease ran out) and left the subscriptions consuming.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bandeja::prelude::*;
use bandeja::record::MessageKind;
use bandeja::sqlite::{Context, SqliteStore};
use bandeja::store::Inspect;
use bandeja::testing::eventually;
use bandeja::transport::{
    InboxSink, Instant, Outgoing, SubscribeRequest, Subscription, TransportError,
};
use bandeja::{BoxKind, Transport};
use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use tokio::sync::Notify;

const WAIT: Duration = Duration::from_secs(10);

#[derive(serde::Serialize, serde::Deserialize)]
struct Ping {
    n: u64,
}
impl Payload for Ping {
    const TYPE: &'static str = "running.Ping";
}

/// Says when it starts, then waits to be released.
#[derive(Clone, Default)]
struct Gate {
    started: Arc<Notify>,
    release: Arc<Notify>,
    handled: Arc<AtomicUsize>,
}

impl EventHandler<SqliteStore, Ping> for Gate {
    async fn handle(&self, _: &mut Context<'_>, _: Event<Ping>) -> Result<(), HandlerError> {
        self.started.notify_one();
        self.release.notified().await;
        self.handled.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

async fn store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-running", SqliteStore::connect).await
}

fn fast() -> Config {
    let mut config = Config::default();
    for group in BoxKind::ALL {
        config.group_mut(group).polling_initial_delay = Duration::ZERO;
        config.group_mut(group).polling_interval = Duration::from_millis(50);
    }
    config
}

async fn status(store: &SqliteStore, box_kind: BoxKind, n: usize) -> Vec<MessageStatus> {
    let rows = store.rows(box_kind).await.expect("rows");
    assert_eq!(rows.len(), n, "{rows:?}");
    rows.into_iter().map(|r| r.message.status).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_running_lets_the_handler_in_flight_finish_and_claims_nothing_more() {
    let (store, _dir) = store().await;
    let gate = Gate::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(fast())
        .on_event("gate", gate.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    bandeja
        .emit(&Event::new("Ping", "1", Ping { n: 1 }))
        .await
        .expect("emit");
    tokio::time::timeout(WAIT, gate.started.notified())
        .await
        .expect("the handler started");

    drop(running);
    gate.release.notify_one();
    eventually(WAIT, || async {
        let rows = store.rows(BoxKind::InboxEvents).await.expect("rows");
        (rows.len() == 1 && rows[0].message.status == MessageStatus::Completed).then_some(())
    })
    .await
    .expect("the handler in flight finished and its row is COMPLETED, not left PROCESSING");

    // Stopped: a new message stays in the outbox.
    bandeja
        .emit(&Event::new("Ping", "2", Ping { n: 2 }))
        .await
        .expect("emit");
    tokio::time::sleep(Duration::from_millis(1000)).await; // 20 polling intervals
    let outbox = status(&store, BoxKind::OutboxEvents, 2).await;
    assert!(outbox.contains(&MessageStatus::Pending), "{outbox:?}");
    assert_eq!(
        status(&store, BoxKind::InboxEvents, 1).await,
        [MessageStatus::Completed]
    );
    assert_eq!(gate.handled.load(Ordering::SeqCst), 1);
}

/// A broker that counts the subscriptions still consuming.
#[derive(Clone, Default)]
struct Counting {
    live: Arc<AtomicUsize>,
}

struct Counted(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl Subscription for Counted {
    async fn stop(self: Box<Self>) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl Transport for Counting {
    fn name(&self) -> &str {
        "counting"
    }

    async fn publish(
        &self,
        _: MessageKind,
        messages: &[Outgoing<'_>],
        _: Instant,
    ) -> Vec<Result<(), TransportError>> {
        messages.iter().map(|_| Ok(())).collect()
    }

    async fn subscribe(
        &self,
        _: SubscribeRequest,
        _: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        self.live.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(Counted(self.live.clone())))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_running_stops_the_broker_subscriptions() {
    let (store, _dir) = store().await;
    let broker = Counting::default();
    let running = Bandeja::builder(store.clone())
        .config(fast())
        .service("consumer")
        .transport(Arc::new(broker.clone()))
        .on_event("gate", Gate::default())
        .build()
        .expect("build")
        .start()
        .await
        .expect("start");
    assert_eq!(broker.live.load(Ordering::SeqCst), 1, "subscribed");

    drop(running);
    eventually(WAIT, || async {
        (broker.live.load(Ordering::SeqCst) == 0).then_some(())
    })
    .await
    .expect("the subscription was stopped");
}
