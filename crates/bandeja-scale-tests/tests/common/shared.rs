//! Per-key order when several processes of one service consume the same broker
//! partitions (contract item 5), on any broker: OS processes `a`, `b` and `c` of the
//! service `fleet`, on one PostgreSQL schema, subscribe `audit` to `fleet.Noted`; a
//! producer (service `fleet-producer`, another schema) emits them over a few partition
//! keys as fast as it can, 20 per transaction, so the outbox publishes them in bursts (one
//! per transaction would hold emission to the server's commit rate, about 120 a second
//! here, and the brokers would never be the bottleneck). `a` and `b` run from
//! the start; `c` starts once a hundred have arrived (a process joining a running service,
//! as in a rolling deploy or a scale-out). With [`Kill::A`], `a` is killed (`SIGKILL`)
//! once half the messages have arrived and it is running one, with the batches and the
//! inbox rows it holds.
//!
//! Checked once nothing is live: every message ran once and committed once (see
//! `common::fleet::Snapshot`; after a kill, what `a` had in hand may run again, and is
//! applied once), and for each key the runs, recorded outside the handler's transaction in
//! the order they began, follow the emission order.

use std::time::{Duration, Instant};

use bandeja::Payload;
use bandeja_scale_tests::fleet::Noted;

use super::fleet::{broker_node_flags, node, wait_settled, FleetDb, Route};

/// Whether a consumer process is killed in the middle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kill {
    None,
    A,
}

/// One run's broker and workload.
pub(crate) struct Plan<'a> {
    /// `fleet-node`'s `--transport`.
    pub(crate) transport: &'a str,
    /// The broker's address.
    pub(crate) url: &'a str,
    /// The names' prefix on the broker.
    pub(crate) prefix: &'a str,
    /// Messages the producer emits.
    pub(crate) messages: usize,
    /// Partition keys they are spread over.
    pub(crate) keys: usize,
    /// Milliseconds of each `audit` run (of `a`'s when it is the one killed).
    pub(crate) handler_ms: u64,
    pub(crate) killed_handler_ms: u64,
    /// Whether `c`, joining mid-run, must take part (not with RabbitMQ's single active
    /// consumer, where the queues stay with the processes that came first).
    pub(crate) joiner_takes_part: bool,
    pub(crate) kill: Kill,
}

/// The longest the run may take to settle once the producer is done.
const SETTLE: Duration = Duration::from_secs(120);
/// The longest the run waits for each of its milestones (the first rows, half of them, `a`
/// running one): half of 10,000 arrive in 15–25 s here; only a failing run waits this long.
const MILESTONE: Duration = Duration::from_secs(180);

/// One broker test at a time: together their processes would hold too many of the
/// PostgreSQL server's connections.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub(crate) async fn run(plan: Plan<'_>) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Plan {
        transport,
        url,
        prefix,
        messages,
        keys,
        handler_ms,
        killed_handler_ms,
        joiner_takes_part,
        kill,
    } = plan;
    let (Some(consumer_db), Some(producer_db)) =
        (FleetDb::postgres().await, FleetDb::postgres().await)
    else {
        return;
    };
    let started = Instant::now();
    let on = |db: &FleetDb, service: &str, extra: &[&str]| {
        broker_node_flags(db, transport, url, prefix, service, extra)
    };
    let slow = format!("audit={handler_ms}");
    let audit = ["--on-event", "audit:noted", "--slow", slow.as_str()];
    // The one to be killed may run slowly, so that the kill lands in the middle of a run.
    let killed_slow = format!("audit={killed_handler_ms}");
    let a_audit = match kill {
        Kill::None => audit,
        Kill::A => ["--on-event", "audit:noted", "--slow", killed_slow.as_str()],
    };
    let a = node("a", &on(&consumer_db, "fleet", &a_audit));
    let mut b = node("b", &on(&consumer_db, "fleet", &audit));
    let count = format!("noted={messages}");
    let mut producer = node(
        "producer",
        &on(
            &producer_db,
            "fleet-producer",
            &[
                "--emit",
                &count,
                "--emit-every",
                "0",
                "--emit-batch",
                "20",
                "--keys",
                &keys.to_string(),
            ],
        ),
    );
    consumer_db
        .wait_count("SELECT count(*) FROM {s}inbox_events", 100, MILESTONE)
        .await;
    let mut c = node("c", &on(&consumer_db, "fleet", &audit));
    let joined_at = consumer_db
        .count("SELECT count(*) FROM {s}inbox_events")
        .await;
    let killed = if kill == Kill::A {
        let half = i64::try_from(messages / 2).unwrap_or(i64::MAX);
        consumer_db
            .wait_count("SELECT count(*) FROM {s}inbox_events", half, MILESTONE)
            .await;
        consumer_db
            .wait_count(
                "SELECT count(*) FROM {s}fleet_runs WHERE worker = 'a' AND exited_at IS NULL",
                1,
                MILESTONE,
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
        messages,
        "every emission is in the outbox"
    );
    let problems = match kill {
        Kill::None => snapshot.problems(&routes),
        Kill::A => snapshot.problems_after_a_kill(&routes),
    };
    assert!(problems.is_empty(), "{problems:#?}");
    let by_worker = snapshot.runs_by_worker();
    if joiner_takes_part {
        assert!(
            by_worker.contains_key(&("audit".to_owned(), "c".to_owned())),
            "c, joining mid-run, took part: runs per (subscriber, worker) {by_worker:?}"
        );
    }
    if kill == Kill::A {
        // The kill hit work in hand: rows `a` held were taken over, or a run it had begun
        // was run again.
        let taken_over = snapshot.inbox.iter().any(|row| row.takeovers > 0);
        let rerun = snapshot.runs.len() > messages;
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
        assert_eq!(runs.len(), messages, "one run per message");
    } else {
        assert!(
            runs.len() >= messages,
            "every message ran (what the killed process had in hand maybe twice): {} runs",
            runs.len()
        );
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
        joined_at < i64::try_from(messages).unwrap_or(i64::MAX),
        "c joined while messages were still arriving ({joined_at} received by then)"
    );
    eprintln!(
        "{transport}: {messages} messages over {keys} keys, three processes of one service (c \
         joined after {joined_at}; kill: {kill:?}), settled in {elapsed:?} in emission order; \
         runs per (subscriber, worker): {by_worker:?}",
    );
}
