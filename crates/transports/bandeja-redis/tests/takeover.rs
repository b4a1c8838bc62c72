//! Entries a consumer left pending when its process died (no stop, no hand-back) are taken
//! over with `XAUTOCLAIM` by another process of the service once they have been idle for
//! `claim_idle`, and handled exactly once, in order: the later entries of their keys wait
//! for them. Against the local Redis (a server that is not there fails the test).

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::envelope::{Event, MessageId};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord};
use bandeja_core::runtime::{Bandeja, Running};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Store};
use bandeja_core::testing::eventually;
use bandeja_core::transport::{routing, wire, Outgoing, Transport};
use bandeja_sqlite::SqliteStore;
use common::{Hanging, CLAIM_IDLE};

const WAIT: Duration = Duration::from_secs(60);

/// What the handler saw, in order: (key, n).
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(MessageId, String, u64)>>>);

impl Seen {
    fn all(&self) -> Vec<(MessageId, String, u64)> {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl<S: Store> EventHandler<S, Ping> for Seen {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        let key = event.aggregate_id.clone().unwrap_or_default();
        if let Ok(mut seen) = self.0.lock() {
            seen.push((event.id, key, event.payload.n));
        }
        Ok(())
    }
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

fn ping(n: u64, key: &str) -> MessageRecord {
    MessageRecord::from_event(&Event::new("Ping", key, Ping { n })).expect("record")
}

/// Publishes `records` in one call, each to its key's partition.
async fn publish(transport: &dyn Transport, records: &[MessageRecord]) {
    let outgoing: Vec<Outgoing<'_>> = records
        .iter()
        .map(|record| Outgoing {
            record,
            address: &record.message_type,
            partition: routing::partition_of(record, transport.partitions()),
            body: wire::encode(record, Some("orders")),
        })
        .collect();
    let results = transport
        .publish(
            MessageKind::Event,
            &outgoing,
            bandeja_core::transport::Instant::now() + WAIT,
        )
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

/// Checks that every key's numbers were handled once each, in order.
fn assert_once_in_order(seen: &Seen, expected: &BTreeMap<String, Vec<u64>>) {
    let mut handled: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (_, key, n) in seen.all() {
        handled.entry(key).or_default().push(n);
    }
    assert_eq!(
        &handled, expected,
        "each handled once, in emission order per key"
    );
}

/// A process (the raw client here, with a consumer name of its own) took the first two
/// entries of a key from the service's group and died before storing them. The service's
/// next process takes them over after `claim_idle` and handles all five in order, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_a_dead_consumer_took_are_claimed_after_claim_idle_and_handled_once_in_order() {
    let prefix = common::namespace();
    let (store, _dir) = common::fresh_store().await;
    let transport = common::transport(&prefix).await;
    let seen = Seen::default();
    // A first run creates the service's group, then stops.
    start_inventory(&store, transport.clone(), &seen)
        .await
        .shutdown_within(Duration::from_secs(10))
        .await;

    let pings: Vec<MessageRecord> = (1..=5).map(|n| ping(n, "k")).collect();
    publish(transport.as_ref(), &pings[..3]).await;
    let partition = routing::partition_of(&pings[0], transport.partitions());
    let stream = format!("{prefix}.events.p{partition}");
    let mut raw = common::raw().await;
    let taken: redis::Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("inventory")
        .arg("a-process-that-died")
        .arg("COUNT")
        .arg(2)
        .arg("STREAMS")
        .arg(&stream)
        .arg(">")
        .query_async(&mut raw)
        .await
        .expect("XREADGROUP");
    assert!(matches!(taken, redis::Value::Array(_)), "{taken:?}");
    assert_eq!(common::pending(&stream, "inventory").await, 2);
    publish(transport.as_ref(), &pings[3..]).await;

    let started = Instant::now();
    let running = start_inventory(&store, transport.clone(), &seen).await;
    eventually(WAIT, || async { (seen.all().len() >= 5).then_some(()) })
        .await
        .unwrap_or_else(|e| panic!("all five handled: {e}; handled {:?}", seen.all()));
    let took = started.elapsed();
    eventually(WAIT, || async {
        (common::pending(&stream, "inventory").await == 0).then_some(())
    })
    .await
    .expect("nothing left pending in the group");
    running.shutdown_within(Duration::from_secs(10)).await;
    assert!(
        took >= CLAIM_IDLE / 2,
        "the three later entries waited for the two taken ones ({took:?})"
    );
    let expected = BTreeMap::from([("k".to_owned(), vec![1, 2, 3, 4, 5])]);
    assert_once_in_order(&seen, &expected);
}

/// Runs the service's first process on a runtime of its own with a consumer that hangs
/// after storing its first batch of each stream, and kills it (the runtime dropped
/// without any stop: no hand-back, connections cut) once it stored something.
fn run_and_kill_a_process(url: String, prefix: String, seen: Seen) -> usize {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the doomed process");
        let stored = runtime.block_on(async {
            let store = SqliteStore::connect(&url).await.expect("open the store");
            let stored = Arc::new(Mutex::new(0));
            // Not guarded: what the killed process holds is never dropped.
            let inner = common::connect(common::options(&prefix)).await;
            let transport = Arc::new(Hanging {
                inner: Arc::new(inner),
                stored: stored.clone(),
            });
            // Its handler's runs are its own: one that ran just before the kill, whose row
            // was not marked COMPLETED yet, runs again in the next process (handlers run
            // at least once; their effects belong in the handler's transaction).
            let running = start_inventory(&store, transport, &seen).await;
            let count = eventually(WAIT, || async {
                let count = stored.lock().map(|s| *s).unwrap_or(0);
                (count > 0).then_some(count)
            })
            .await
            .expect("the doomed process stored a batch");
            // Killed: nothing of it runs any more, nothing stops gracefully.
            std::mem::forget(running);
            count
        });
        runtime.shutdown_background();
        stored
    })
    .join()
    .expect("the doomed process's thread")
}

/// A process stored batches and was killed before acknowledging them; the service's next
/// process takes its entries over after `claim_idle`: every event is stored once (one
/// inbox row each, the copies of what the killed process stored absorbed) and handled, in
/// order per key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_after_storing_leaves_entries_another_takes_over() {
    let prefix = common::namespace();
    let (store, dir) = common::fresh_store().await;
    let url = dir.sqlite_url("boxes.db");
    let transport = common::transport(&prefix).await;
    let keys = ["a", "b", "c", "d"];
    let pings: Vec<MessageRecord> = (0..40u64)
        .map(|n| ping(n, keys[usize::try_from(n).unwrap_or(0) % keys.len()]))
        .collect();
    // Half published before the doomed process starts (its group delivers the stream
    // from the start), half after it died: the next process must store those after what
    // the dead one held.
    publish(transport.as_ref(), &pings[..20]).await;
    let doomed = Seen::default();
    let killed = {
        let (url, prefix, seen) = (url.clone(), prefix.clone(), doomed.clone());
        tokio::task::spawn_blocking(move || run_and_kill_a_process(url, prefix, seen))
            .await
            .expect("the doomed process")
    };
    assert!(killed > 0);
    publish(transport.as_ref(), &pings[20..]).await;

    let seen = Seen::default();
    let running = start_inventory(&store, transport.clone(), &seen).await;
    let streams: Vec<String> = (0..transport.partitions())
        .map(|p| format!("{prefix}.events.p{p}"))
        .collect();
    let inbox = eventually(WAIT, || async {
        let rows = store.rows(BoxKind::InboxEvents).await.expect("rows");
        let mut left = 0;
        for stream in &streams {
            left += common::pending(stream, "inventory").await;
        }
        let done = left == 0
            && rows.len() == pings.len()
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed);
        done.then_some(rows)
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "every event handled, nothing left pending: {e}; handled {}",
            seen.all().len()
        )
    });
    running.shutdown_within(Duration::from_secs(10)).await;
    let mut stored: Vec<MessageId> = inbox.iter().map(|r| r.message.record.id).collect();
    stored.sort();
    let mut ids: Vec<MessageId> = pings.iter().map(|p| p.id).collect();
    ids.sort();
    assert_eq!(stored, ids, "one inbox row per event");
    assert!(
        inbox.iter().any(|r| r.message.delivery_count >= 2),
        "what the killed process stored came again and was absorbed: {:?}",
        inbox
            .iter()
            .map(|r| r.message.delivery_count)
            .collect::<Vec<_>>()
    );
    // What the next process handled, it handled in order, once each; with what the
    // killed one handled, every event was.
    let mut handled: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (_, key, n) in seen.all() {
        handled.entry(key).or_default().push(n);
    }
    for (key, numbers) in &handled {
        assert!(
            numbers.windows(2).all(|w| w[0] < w[1]),
            "key {key} handled in order, once each: {numbers:?}"
        );
    }
    let mut everything: Vec<MessageId> = seen
        .all()
        .into_iter()
        .chain(doomed.all())
        .map(|(id, _, _)| id)
        .collect();
    everything.sort();
    everything.dedup();
    assert_eq!(everything, ids, "every event handled");
}
