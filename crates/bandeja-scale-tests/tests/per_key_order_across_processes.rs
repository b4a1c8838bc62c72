//! Three `scale-worker` processes whose handlers fail 10% of their attempts drain 10,000
//! events over 100 partition keys. For each subscriber and key, the effects, in the order
//! they were applied, are exactly that key's emissions in emission order (contract point
//! 5, across processes and retries), each applied once (point 4).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bandeja_scale_tests::SUBSCRIBERS;
use common::{terminate_all, try_fresh, Worker};
use rand::Rng;

const EVENTS: u64 = 10_000;
const KEYS: u64 = 100;
const HANDLINGS: i64 = 20_000;
const FAIL_RATE: f64 = 0.1;
const LEASE_SECS: u32 = 5;
const DRAIN_TIMEOUT: Duration = Duration::from_secs(120);

/// `(subscriber, key)` → the `n` values in order.
type Sequences = BTreeMap<(String, String), Vec<i64>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_key_order_holds_across_processes_and_retries() {
    let Some(fresh) = try_fresh().await else {
        return;
    };
    let started = Instant::now();
    let mut rng = rand::thread_rng();
    let ticks: Vec<(String, u64)> = (0..EVENTS)
        .map(|n| (format!("key-{}", rng.gen_range(0..KEYS)), n))
        .collect();
    let mut expected = Sequences::new();
    for subscriber in SUBSCRIBERS {
        for (key, n) in &ticks {
            expected
                .entry((subscriber.to_owned(), key.clone()))
                .or_default()
                .push(i64::try_from(*n).expect("fits"));
        }
    }
    fresh.emit(&ticks).await;
    eprintln!("emitted {EVENTS} events in {:?}", started.elapsed());

    let schema = fresh.schema().to_owned();
    let mut workers = Vec::new();
    for id in ["o-one", "o-two", "o-three"] {
        workers.push(Worker::start(&schema, id, FAIL_RATE, LEASE_SECS).await);
    }
    fresh.wait_count("effects", HANDLINGS, DRAIN_TIMEOUT).await;
    eprintln!("{HANDLINGS} effects after {:?}", started.elapsed());
    terminate_all(&mut workers).await;

    assert_eq!(fresh.count("effects").await, HANDLINGS);
    assert_eq!(
        fresh.count("violations").await,
        0,
        "exactly-once violations"
    );
    assert_eq!(fresh.count("inbox_events").await, HANDLINGS);
    assert_eq!(
        fresh.count("inbox_events WHERE status = 'COMPLETED'").await,
        HANDLINGS,
        "{}",
        fresh.status_summary().await
    );
    let retried = fresh.count("inbox_events WHERE retry_count >= 1").await;
    eprintln!("{retried} inbox rows needed at least one retry");
    assert!(
        retried > 0,
        "--fail-rate {FAIL_RATE} made some attempts fail"
    );
    let workers_used = fresh
        .scalar::<i64>("SELECT count(DISTINCT worker) FROM {s}.effects")
        .await;
    eprintln!("effects applied by {workers_used} workers");

    let rows: Vec<(String, String, i64)> = sqlx::query_as(
        &fresh.sql("SELECT subscriber, partition_key, n FROM {s}.effects ORDER BY seq"),
    )
    .fetch_all(fresh.pool())
    .await
    .expect("effects");
    let mut applied = Sequences::new();
    for (subscriber, key, n) in rows {
        applied.entry((subscriber, key)).or_default().push(n);
    }
    let mut out_of_order = Vec::new();
    for (group, sequence) in &applied {
        if sequence.windows(2).any(|w| w[0] >= w[1]) {
            out_of_order.push(group.clone());
        }
    }
    assert!(
        out_of_order.is_empty(),
        "n not strictly increasing by effects.seq for {} (subscriber, key) pairs, e.g. {:?}: {:?}",
        out_of_order.len(),
        out_of_order.first(),
        out_of_order.first().and_then(|g| applied.get(g))
    );
    assert_eq!(applied.len(), expected.len(), "every (subscriber, key)");
    for (group, sequence) in &expected {
        assert_eq!(
            applied.get(group),
            Some(sequence),
            "{group:?}: applied order differs from emission order"
        );
    }
    eprintln!("total: {:?}", started.elapsed());
}
