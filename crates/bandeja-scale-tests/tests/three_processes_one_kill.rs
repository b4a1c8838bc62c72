//! Three `scale-worker` processes drain 20,000 events (two subscribers: 40,000 handlings);
//! one is SIGKILLed while it holds claimed rows and is restarted. Checked from the
//! database: every effect exactly once, no violation, every row COMPLETED, and the killed
//! process's claims taken over after their lease (contract points 4 and 7).

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bandeja::testing::eventually;
use common::{terminate_all, try_fresh, Fresh, Worker};
use rand::Rng;

const EVENTS: u64 = 20_000;
const KEYS: u64 = 200;
const HANDLINGS: i64 = 40_000;
/// `--lease`: lock-at-most-for of both event boxes, in seconds.
const LEASE_SECS: u32 = 5;
const DRAIN_TIMEOUT: Duration = Duration::from_secs(120);
/// Kill attempts: a kill that lands between two batches (nothing held) is retried.
const KILL_ATTEMPTS: usize = 5;

/// Rows of the inbox and the outbox still `PROCESSING` under a claim of `worker`.
async fn held_count(fresh: &Fresh, worker: &str) -> i64 {
    fresh
        .scalar(&format!(
            "SELECT (SELECT count(*) FROM {{s}}.inbox_events WHERE status = 'PROCESSING' \
               AND locked_by LIKE '{worker}%') \
             + (SELECT count(*) FROM {{s}}.outbox_events WHERE status = 'PROCESSING' \
               AND locked_by LIKE '{worker}%')"
        ))
        .await
}

/// `(id, subscriber)` of inbox rows selected by the query `template`.
async fn inbox_keys(fresh: &Fresh, template: &str) -> BTreeSet<(uuid::Uuid, String)> {
    sqlx::query_as(&fresh.sql(template))
        .fetch_all(fresh.pool())
        .await
        .expect("inbox rows")
        .into_iter()
        .collect()
}

/// What the victim held when it was killed.
struct Kill {
    at: Instant,
    /// `(id, subscriber)` of the inbox rows it held.
    held: BTreeSet<(uuid::Uuid, String)>,
    /// Seconds of lease its claims had left, just after the kill.
    lease_left: f64,
}

/// Kills the victim at a moment it holds inbox rows.
async fn kill_mid_batch(fresh: &Fresh, victim: &mut Worker) -> Kill {
    let processing = format!(
        "inbox_events WHERE status = 'PROCESSING' AND locked_by LIKE '{}%'",
        victim.id
    );
    for attempt in 1..=KILL_ATTEMPTS {
        fresh
            .wait_count(&processing, 1, Duration::from_secs(30))
            .await;
        let at = Instant::now();
        victim.kill();
        // Once its connections are gone (a commit it sent just before dying has landed or
        // rolled back), a dead process changes nothing more: what it holds now, it held
        // at the kill, and only a takeover releases it.
        fresh.wait_disconnected(&victim.application_name).await;
        let held = inbox_keys(
            fresh,
            &format!("SELECT id, subscriber FROM {{s}}.{processing}"),
        )
        .await;
        if held.is_empty() {
            eprintln!("kill of {} landed between batches; again", victim.id);
            *victim = Worker::start(fresh.schema(), &victim.id, 0.0, LEASE_SECS).await;
            continue;
        }
        let lease_left: f64 = fresh
            .scalar(&format!(
                "SELECT EXTRACT(EPOCH FROM min(locked_until) - clock_timestamp())::float8 \
                 FROM {{s}}.{processing}"
            ))
            .await;
        eprintln!(
            "killed {} (attempt {attempt}) holding {} inbox rows, {} rows in all, lease left {lease_left:.2}s",
            victim.id,
            held.len(),
            held_count(fresh, &victim.id).await
        );
        return Kill {
            at,
            held,
            lease_left,
        };
    }
    panic!("{} never held inbox rows at the kill", victim.id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_one_killed_mid_batch_apply_every_effect_exactly_once() {
    let Some(fresh) = try_fresh().await else {
        return;
    };
    let started = Instant::now();
    let mut rng = rand::thread_rng();
    let ticks: Vec<(String, u64)> = (0..EVENTS)
        .map(|n| (format!("key-{}", rng.gen_range(0..KEYS)), n))
        .collect();
    fresh.emit(&ticks).await;
    eprintln!("emitted {EVENTS} events in {:?}", started.elapsed());

    let schema = fresh.schema().to_owned();
    let mut workers = vec![
        Worker::start(&schema, "w-one", 0.0, LEASE_SECS).await,
        Worker::start(&schema, "w-two", 0.0, LEASE_SECS).await,
        Worker::start(&schema, "w-three", 0.0, LEASE_SECS).await,
    ];
    fresh.wait_count("effects", 3_000, DRAIN_TIMEOUT).await;
    eprintln!("3,000 effects after {:?}", started.elapsed());

    let kill = kill_mid_batch(&fresh, &mut workers[1]).await;
    // Restarted under another id, so the rows the killed one held stay told apart.
    workers[1] = Worker::start(&schema, "w-four", 0.0, LEASE_SECS).await;
    eventually(Duration::from_secs(60), || async {
        (held_count(&fresh, "w-two").await == 0).then_some(())
    })
    .await
    .expect("the killed worker's claims are taken over");
    let takeover = kill.at.elapsed();
    eprintln!(
        "takeover: {takeover:?} after the kill (lease {LEASE_SECS}s, {:.2}s of it left at the kill)",
        kill.lease_left
    );
    assert!(
        takeover.as_secs_f64() >= kill.lease_left - 0.05,
        "claims taken over after {takeover:?}, before their lease ran out ({:.2}s left)",
        kill.lease_left
    );

    fresh.wait_count("effects", HANDLINGS, DRAIN_TIMEOUT).await;
    eprintln!("{HANDLINGS} effects after {:?}", started.elapsed());
    terminate_all(&mut workers).await;

    // Exactly once: 20,000 × 2 effects, one per (message, subscriber), nothing applied twice.
    assert_eq!(fresh.count("effects").await, HANDLINGS);
    assert_eq!(
        fresh.count("violations").await,
        0,
        "exactly-once violations"
    );
    for subscriber in bandeja_scale_tests::SUBSCRIBERS {
        let filter = format!("effects WHERE subscriber = '{subscriber}'");
        assert_eq!(fresh.count(&filter).await, HANDLINGS / 2, "{subscriber}");
    }
    let distinct_n: i64 = fresh
        .scalar("SELECT count(DISTINCT n) FROM {s}.effects")
        .await;
    assert_eq!(
        distinct_n,
        i64::try_from(EVENTS).expect("fits"),
        "every event"
    );
    let orphans = fresh
        .count(
            "effects e WHERE NOT EXISTS (SELECT 1 FROM {s}.inbox_events i \
             WHERE i.id = e.message_id AND i.subscriber = e.subscriber)",
        )
        .await;
    assert_eq!(orphans, 0, "every effect belongs to an inbox row");

    // Every row COMPLETED, in both boxes.
    let events = i64::try_from(EVENTS).expect("fits");
    assert_eq!(fresh.count("outbox_events").await, events);
    assert_eq!(
        fresh
            .count("outbox_events WHERE status = 'COMPLETED'")
            .await,
        events,
        "{}",
        fresh.status_summary().await
    );
    assert_eq!(fresh.count("inbox_events").await, HANDLINGS);
    assert_eq!(
        fresh.count("inbox_events WHERE status = 'COMPLETED'").await,
        HANDLINGS,
        "{}",
        fresh.status_summary().await
    );

    // The rows the killed process held were taken over after their lease: counted as a
    // takeover, not as a failed attempt.
    let taken_over = inbox_keys(
        &fresh,
        "SELECT id, subscriber FROM {s}.inbox_events WHERE takeover_count >= 1 \
         AND retry_count = 0 \
         AND last_error LIKE 'lease of w-two%' AND last_error LIKE '%taken over%'",
    )
    .await;
    let held_and_taken = kill.held.intersection(&taken_over).count();
    eprintln!(
        "{held_and_taken} of the {} inbox rows held at the kill were taken over",
        kill.held.len()
    );
    assert!(
        held_and_taken > 0,
        "no held row shows a lease takeover; held {:?}, taken over {taken_over:?}",
        kill.held
    );
    eprintln!("total: {:?}", started.elapsed());
}
