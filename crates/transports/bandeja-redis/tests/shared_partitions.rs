//! Several processes of one service share its consumer groups: the entries of a stream go
//! to whichever consumer asks, and still every key is stored and handled in emission
//! order, each message once (an entry is stored only once nothing older is held by
//! another consumer). Against the local Redis (a server that is not there fails the
//! test).

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::envelope::Event;
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Store};
use bandeja_core::testing::eventually;

/// Events emitted, over few keys so that each partition carries long runs of one key.
const EVENTS: u64 = 400;
const KEYS: [&str; 3] = ["a", "b", "c"];

/// What the handlers of every process saw, in order: (key, n).
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, u64)>>>);

impl<S: Store> EventHandler<S, Ping> for Seen {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        let key = event.aggregate_id.clone().unwrap_or_default();
        if let Ok(mut seen) = self.0.lock() {
            seen.push((key, event.payload.n));
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_of_a_service_keep_every_key_in_order() {
    let prefix = common::namespace();
    let (orders_store, _orders_dir) = common::fresh_store().await;
    let (inventory_store, _inventory_dir) = common::fresh_store().await;
    let seen = Seen::default();
    let mut processes = Vec::new();
    for _ in 0..3 {
        // Small batches: the processes take turns within a partition often.
        let mut config = fast_config();
        config.events_inbox.batch_size = 5;
        let process = Bandeja::builder(inventory_store.clone())
            .config(config)
            .service("inventory")
            .transport(common::transport(&prefix).await)
            .on_event::<Ping, _>("stock", seen.clone())
            .build()
            .expect("build an inventory process");
        processes.push(process.start().await.expect("start an inventory process"));
    }
    let orders = Bandeja::builder(orders_store.clone())
        .config(fast_config())
        .service("orders")
        .transport(common::transport(&prefix).await)
        .build()
        .expect("build orders");
    let producer = orders.start().await.expect("start orders");
    for n in 0..EVENTS {
        let key = KEYS[usize::try_from(n).unwrap_or(0) % KEYS.len()];
        orders
            .emit(&Event::new("Ping", key, Ping { n }))
            .await
            .expect("emit");
    }
    let total = usize::try_from(EVENTS).expect("a count");
    let inbox = eventually(Duration::from_secs(120), || async {
        let rows = inventory_store
            .rows(BoxKind::InboxEvents)
            .await
            .expect("rows");
        let done = rows.len() == total
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed);
        done.then_some(rows)
    })
    .await
    .expect("every event handled");
    producer.shutdown_within(Duration::from_secs(10)).await;
    for process in processes {
        process.shutdown_within(Duration::from_secs(10)).await;
    }

    let mut by_seq = inbox;
    by_seq.sort_by_key(|r| r.message.seq);
    let mut stored: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for row in &by_seq {
        let n = serde_json::from_str::<Ping>(&row.message.record.payload)
            .expect("a ping")
            .n;
        stored
            .entry(row.message.record.partition_key.clone().unwrap_or_default())
            .or_default()
            .push(n);
    }
    let mut handled: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (key, n) in seen.0.lock().expect("seen").iter() {
        handled.entry(key.clone()).or_default().push(*n);
    }
    let mut expected: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for n in 0..EVENTS {
        let key = KEYS[usize::try_from(n).unwrap_or(0) % KEYS.len()];
        expected.entry(key.to_owned()).or_default().push(n);
    }
    assert_eq!(stored, expected, "every key stored in emission order, once");
    assert_eq!(
        handled, expected,
        "every key handled in emission order, once"
    );
}
