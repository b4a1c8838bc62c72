//! Per-key order when several processes of one service pull the same NATS JetStream
//! partitions (contract item 5), on `NATS_URL` (default `nats://127.0.0.1:4222`) under a
//! stream prefix of its own (the streams are deleted afterwards).
//!
//! OS processes `a`, `b` and `c` of the service `fleet`, on one PostgreSQL schema,
//! subscribe `audit` (100 ms a run) to `fleet.Noted`. A producer (service
//! `fleet-producer`, another schema) emits 300 of them over 3 partition keys as fast as it
//! can, so the outbox publishes them in bursts. `a` and `b` run from the start; `c` starts
//! once a hundred have arrived, while the others hold batches (a process joining a running
//! service, as in a rolling deploy or a scale-out). They all pull every partition's durable
//! consumer; a partition's messages come to whichever pull the server serves, and a process
//! that stored its batch before another stored an older one would put a later message of a
//! key first in the inbox.
//!
//! Checked once nothing is live: every message ran once and committed once (see
//! `common::fleet::Snapshot`), and for each key the runs, recorded outside the handler's
//! transaction in the order they began, follow the emission order.
//!
//! The second test gives `a` a handler of 1 s and kills it (`SIGKILL`) once half the
//! messages have arrived and it is running one, with the batches and the inbox rows it
//! holds: another process takes them over and runs what it had in hand again (at least
//! once), every message is still applied once, and the order holds.
//!
//! The test fails when NATS is unreachable in CI (`CI=true`) and is skipped after a notice
//! otherwise.

mod common;

use std::time::{Duration, Instant};

use bandeja::Payload;
use bandeja_scale_tests::fleet::Noted;
use common::fleet::{broker_node_flags, nats_url, node, reach_nats, wait_settled, FleetDb, Route};

/// Messages the producer emits.
const MESSAGES: usize = 300;
/// The longest the run may take to settle once the producer is done.
const SETTLE: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_sharing_nats_partitions_keep_each_key_in_order() {
    run(Kill::None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_while_sharing_nats_partitions_loses_no_order() {
    run(Kill::A).await;
}

/// Whether a consumer process is killed in the middle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kill {
    None,
    A,
}

/// One broker test at a time: together their processes would hold too many of the
/// PostgreSQL server's connections.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn run(kill: Kill) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let url = nats_url();
    let prefix = format!("order{:08x}", rand::random::<u32>());
    let Some(streams) = reach_nats(&url, &prefix).await else {
        return;
    };
    let (Some(consumer_db), Some(producer_db)) =
        (FleetDb::postgres().await, FleetDb::postgres().await)
    else {
        return;
    };
    let started = Instant::now();
    let on = |db: &FleetDb, service: &str, extra: &[&str]| {
        broker_node_flags(db, "nats", &url, &prefix, service, extra)
    };
    let audit = ["--on-event", "audit:noted", "--slow", "audit=100"];
    // The one to be killed runs slowly, so that the kill lands in the middle of a run.
    let a_audit = match kill {
        Kill::None => audit,
        Kill::A => ["--on-event", "audit:noted", "--slow", "audit=1000"],
    };
    let a = node("a", &on(&consumer_db, "fleet", &a_audit));
    let mut b = node("b", &on(&consumer_db, "fleet", &audit));
    let count = format!("noted={MESSAGES}");
    let mut producer = node(
        "producer",
        &on(
            &producer_db,
            "fleet-producer",
            &["--emit", &count, "--emit-every", "0", "--keys", "3"],
        ),
    );
    consumer_db
        .wait_count(
            "SELECT count(*) FROM {s}inbox_events",
            100,
            Duration::from_secs(60),
        )
        .await;
    let mut c = node("c", &on(&consumer_db, "fleet", &audit));
    let joined_at = consumer_db
        .count("SELECT count(*) FROM {s}inbox_events")
        .await;
    let killed = if kill == Kill::A {
        let half = i64::try_from(MESSAGES / 2).unwrap_or(i64::MAX);
        consumer_db
            .wait_count(
                "SELECT count(*) FROM {s}inbox_events",
                half,
                Duration::from_secs(60),
            )
            .await;
        consumer_db
            .wait_count(
                "SELECT count(*) FROM {s}fleet_runs WHERE worker = 'a' AND exited_at IS NULL",
                1,
                Duration::from_secs(60),
            )
            .await;
        // Dropping a running node kills it with SIGKILL.
        drop(a);
        None
    } else {
        Some(a)
    };
    producer.expect_line("emitted", Duration::from_secs(120));
    let routes = [Route::every(Noted::TYPE, "audit")];
    let snapshot = wait_settled(&[&producer_db], &consumer_db, &routes, SETTLE).await;
    let elapsed = started.elapsed();
    producer.terminate().await;
    if let Some(mut a) = killed {
        a.terminate().await;
    }
    b.terminate().await;
    c.terminate().await;

    assert_eq!(
        snapshot.outbox.len(),
        MESSAGES,
        "every emission is in the outbox"
    );
    let problems = match kill {
        Kill::None => snapshot.problems(&routes),
        Kill::A => snapshot.problems_after_a_kill(&routes),
    };
    assert!(problems.is_empty(), "{problems:#?}");
    let by_worker = snapshot.runs_by_worker();
    assert!(
        by_worker.contains_key(&("audit".to_owned(), "c".to_owned())),
        "c, joining mid-run, took part: runs per (subscriber, worker) {by_worker:?}"
    );
    if kill == Kill::A {
        // The kill hit work in hand: rows `a` held were taken over, or a run it had begun
        // was run again.
        let taken_over = snapshot.inbox.iter().any(|row| row.takeovers > 0);
        let rerun = snapshot.runs.len() > MESSAGES;
        assert!(
            taken_over || rerun,
            "a held nothing when it was killed: {} runs, no row taken over",
            snapshot.runs.len()
        );
    }
    // Each run's key and emission number, in the order the runs began.
    let runs: Vec<(String, i64)> = consumer_db
        .rows(
            "SELECT i.partition_key, CAST(i.payload ->> 'n' AS BIGINT) \
               FROM {s}fleet_runs r JOIN {s}inbox_events i \
                 ON CAST(i.id AS TEXT) = r.message_id AND i.subscriber = r.subscriber \
              WHERE r.subscriber = 'audit' ORDER BY r.id",
        )
        .await;
    if kill == Kill::None {
        assert_eq!(runs.len(), MESSAGES, "one run per message");
    }
    let mut last: std::collections::BTreeMap<&str, i64> = Default::default();
    let mut out_of_order = Vec::new();
    for (key, n) in &runs {
        if let Some(before) = last.insert(key, *n) {
            if before > *n {
                out_of_order.push(format!("{key}: {n} ran after {before}"));
            }
        }
    }
    assert!(
        out_of_order.is_empty(),
        "each key handled in emission order: {} runs out of order: {out_of_order:?}",
        out_of_order.len()
    );
    assert!(
        joined_at < i64::try_from(MESSAGES).unwrap_or(i64::MAX),
        "c joined while messages were still arriving ({joined_at} received by then)"
    );
    eprintln!(
        "nats: {MESSAGES} messages over 3 keys, three processes of one service (c joined after \
         {joined_at}; kill: {kill:?}), settled in {elapsed:?} in emission order; runs per \
         (subscriber, worker): {by_worker:?}",
    );
    drop(streams);
}
