//! A rolling deploy under load (issue 14, item 7; contract items 7 and 9): old processes
//! are stopped one by one while new ones, with one more subscriber and one more command
//! handler, start — on PostgreSQL with the in-process transport, and over NATS JetStream
//! (`NATS_URL`, default `nats://127.0.0.1:4222`, a stream prefix of its own, deleted
//! afterwards).
//!
//! The fleet, all `fleet-node` processes of the service `fleet` on one schema:
//! - `old-1` and `old-2`, the old version: subscriber `audit` of `fleet.Noted` (20 ms a
//!   run) and the handler `ship` of the command `fleet.Ship`;
//! - `new-1` and `new-2`, the new version: also the subscriber `billing` of `fleet.Noted`
//!   (50 ms a run) and the handler `refund` of the new command `fleet.Refund`; each emits
//!   40 `fleet.Refund` commands to `fleet` (one every 50 ms) once started;
//! - `emitter` (no subscriber; in process on the same schema, over NATS the service
//!   `fleet-emitter` on a schema of its own) emits 250 `fleet.Noted` and 250 `fleet.Ship`
//!   at a steady rate (one of each every 25 ms, each in its own transaction) through the
//!   whole deploy.
//!
//! The deploy: `old-1` and `old-2` run, the emitter starts; once it has emitted 60 events,
//! `new-1` starts, then `old-1` is stopped (SIGTERM: it stops claiming, finishes or
//! releases its batches, unregisters, exits 0); once it has emitted 130, `new-2` starts
//! and `old-2` is stopped. The waits poll the database; the steps land in the middle of the
//! emission, and `old-2` still runs (relaying, in process, and receiving, over NATS) while
//! `new-1` emits the new command.
//!
//! Checked once every emission is done and nothing is live (see `common::fleet::Snapshot`):
//! every `fleet.Noted` reached `audit` exactly once; every `fleet.Noted` created at or after
//! `billing`'s `first_seen_at` (the `subscriptions` table) reached `billing` exactly once
//! (one emitted earlier but relayed after may have a row too: at most once); every
//! `fleet.Ship` and `fleet.Refund` was handled exactly once — each meaning one COMPLETED
//! inbox row, one handler run recorded outside the transaction, one committed effect;
//! nothing FAILED, retried or taken over anywhere (a graceful stop hands its rows back
//! without a takeover); no handler ran twice; no inbox row of another subscriber; the old
//! processes never held or ran a `billing` or `refund` row, and both took part before
//! they were stopped.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bandeja::Payload;
use bandeja_scale_tests::fleet::{Noted, Refund, Ship};
use common::fleet::{args, broker_flags, nats_url, node, reach_nats, wait_settled, FleetDb, Route};
use common::pair::Service;

/// `fleet.Noted` and `fleet.Ship` emitted by the emitter, each.
const STEADY: u64 = 250;
/// `fleet.Refund` emitted by each new process.
const REFUNDS_EACH: u64 = 40;
/// The longest the run may take to settle once every emission is done.
const SETTLE: Duration = Duration::from_secs(45);
/// `new-1` starts (and `old-1` stops) once the emitter has emitted this many events…
const STEP_1: i64 = 60;
/// … and `new-2` (and `old-2`) once it has emitted this many.
const STEP_2: i64 = 130;
/// The longest one step of the deploy may wait for the load to move on.
const STEP: Duration = Duration::from_secs(30);

/// One rolling deploy at a time: the processes of two would hold too many of the
/// PostgreSQL server's connections.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The transport flags of every process, for the service `service`.
fn transport_flags(nats: Option<(&str, &str)>, service: &str) -> Vec<String> {
    match nats {
        None => Vec::new(),
        Some((url, prefix)) => {
            let mut flags = broker_flags("nats", url, prefix, service);
            flags.extend(args(&["--command-target", "fleet"]));
            flags
        }
    }
}

/// The ids of the `fleet.Noted` rows of `outbox_db` created at or after `billing`'s first
/// registration in `fleet_db`, and that moment.
async fn noted_since_billing(
    outbox_db: &FleetDb,
    fleet_db: &FleetDb,
) -> (BTreeSet<String>, String) {
    let first_seen: Vec<(String,)> = fleet_db
        .rows(&format!(
            "SELECT CAST(first_seen_at AS TEXT) FROM {{s}}subscriptions \
             WHERE kind = 'event' AND message_type = '{}' AND subscriber = 'billing'",
            Noted::TYPE
        ))
        .await;
    let first_seen = first_seen
        .first()
        .map(|row| row.0.clone())
        .expect("billing is registered");
    let ids: Vec<(String,)> = outbox_db
        .rows(&format!(
            "SELECT CAST(id AS TEXT) FROM {{s}}outbox_events WHERE message_type = '{}' \
             AND created_at >= CAST('{first_seen}' AS TIMESTAMPTZ)",
            Noted::TYPE
        ))
        .await;
    (ids.into_iter().map(|row| row.0).collect(), first_seen)
}

async fn rolling_deploy(nats: Option<&str>) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let label = if nats.is_some() { "nats" } else { "in process" };
    let prefix = format!("roll{:08x}", rand::random::<u32>());
    let streams = match nats {
        None => None,
        Some(url) => {
            let Some(streams) = reach_nats(url, &prefix).await else {
                return;
            };
            Some(streams)
        }
    };
    let Some(db) = FleetDb::postgres().await else {
        return;
    };
    // In process the emitter writes into the fleet's own outbox; over NATS it is a service
    // of its own.
    let emitter_db = match nats {
        None => None,
        Some(_) => {
            let Some(emitter_db) = FleetDb::postgres().await else {
                return;
            };
            Some(emitter_db)
        }
    };
    let nats = nats.map(|url| (url, prefix.as_str()));
    let started = Instant::now();
    let flags = |extra: &[&str]| {
        let mut flags = db.store_args();
        flags.extend(transport_flags(nats, "fleet"));
        flags.extend(args(extra));
        flags
    };
    let old_flags = flags(&[
        "--on-event",
        "audit:noted",
        "--on-command",
        "ship:ship",
        "--slow",
        "audit=20",
    ]);
    let refunds = format!("refund={REFUNDS_EACH}");
    let new_flags = flags(&[
        "--on-event",
        "audit:noted",
        "--on-event",
        "billing:noted",
        "--on-command",
        "ship:ship",
        "--on-command",
        "refund:refund",
        "--slow",
        "audit=20",
        "--slow",
        "billing=50",
        "--emit",
        &refunds,
        "--emit-every",
        "50",
    ]);
    let sampler = db.sampler();
    let mut old_1 = node("old-1", &old_flags);
    let mut old_2 = node("old-2", &old_flags);
    let mut emitter_flags = emitter_db.as_ref().unwrap_or(&db).store_args();
    emitter_flags.extend(transport_flags(nats, "fleet-emitter"));
    let steady = [format!("noted={STEADY}"), format!("ship={STEADY}")];
    emitter_flags.extend(args(&[
        "--emit",
        &steady[0],
        "--emit",
        &steady[1],
        "--emit-every",
        "25",
    ]));
    let mut emitter = node("emitter", &emitter_flags);

    // The steps follow the emitter's progress, so they land in the middle of the load.
    let emitted_events = "SELECT count(*) FROM {s}outbox_events";
    let emitter_outbox = emitter_db.as_ref().unwrap_or(&db);
    emitter_outbox
        .wait_count(emitted_events, STEP_1, STEP)
        .await;
    let mut new_1 = node("new-1", &new_flags);
    stop(&mut old_1, started).await;
    emitter_outbox
        .wait_count(emitted_events, STEP_2, STEP)
        .await;
    let mut new_2 = node("new-2", &new_flags);
    stop(&mut old_2, started).await;
    let deployed = started.elapsed();

    emitter.expect_line("emitted", Duration::from_secs(60));
    new_1.expect_line("emitted", Duration::from_secs(60));
    new_2.expect_line("emitted", Duration::from_secs(60));
    let emitted = started.elapsed();
    let senders: Vec<&FleetDb> = match &emitter_db {
        Some(emitter_db) => vec![emitter_db, &db],
        None => vec![&db],
    };
    let (since_billing, first_seen) = noted_since_billing(senders[0], &db).await;
    let routes = [
        Route::every(Noted::TYPE, "audit"),
        Route {
            message_type: Noted::TYPE,
            subscriber: "billing",
            required: Some(since_billing.clone()),
        },
        Route::every(Ship::TYPE, "ship"),
        Route::every(Refund::TYPE, "refund"),
    ];
    let snapshot = wait_settled(&senders, &db, &routes, SETTLE).await;
    let settled = started.elapsed();
    emitter.terminate().await;
    new_1.terminate().await;
    new_2.terminate().await;
    let (held, samples) = sampler.finish().await;

    let count = |message_type: &str| {
        snapshot
            .outbox
            .iter()
            .filter(|o| o.message_type == message_type)
            .count()
    };
    let steady = usize::try_from(STEADY).expect("small");
    let refunds = usize::try_from(2 * REFUNDS_EACH).expect("small");
    assert_eq!(
        (count(Noted::TYPE), count(Ship::TYPE), count(Refund::TYPE)),
        (steady, steady, refunds),
        "{label}: every emission is in an outbox"
    );
    assert!(
        !since_billing.is_empty() && since_billing.len() < steady,
        "{label}: billing was registered during the emission ({} of {steady} events after {first_seen})",
        since_billing.len()
    );
    assert!(
        samples >= 10 && held.iter().any(|(subscriber, _)| subscriber == "billing"),
        "{label}: the sampler saw the claims ({samples} samples, holders {held:?})"
    );
    let problems = snapshot.problems(&routes);
    assert!(
        problems.is_empty(),
        "{label}: {problems:#?}\nbilling registered at {first_seen}; events it lacks: {:#?}",
        unbilled(senders[0], &db, &since_billing).await
    );
    let by_worker = snapshot.runs_by_worker();
    for (subscriber, worker) in by_worker.keys().chain(held.iter()) {
        assert!(
            !worker.starts_with("old-") || subscriber == "audit" || subscriber == "ship",
            "{label}: {worker} held or ran a row of `{subscriber}`, which it does not run; \
             runs per (subscriber, worker): {by_worker:?}; holders seen: {held:?}"
        );
    }
    for old in ["old-1", "old-2"] {
        assert!(
            by_worker.contains_key(&("audit".to_owned(), old.to_owned())),
            "{label}: {old} took part before it was stopped; runs per (subscriber, worker): {by_worker:?}"
        );
    }
    let billed_before = snapshot
        .inbox
        .iter()
        .filter(|i| i.subscriber == "billing" && !since_billing.contains(&i.id))
        .count();
    eprintln!(
        "rolling deploy ({label}): deployed after {deployed:?}, emission done after {emitted:?}, \
         settled after {settled:?}; billing registered at {first_seen}: {} events after it \
         (each billed once), {billed_before} earlier ones billed too; runs per (subscriber, \
         worker): {by_worker:?}; holders seen in {samples} samples: {held:?}",
        since_billing.len()
    );
    drop(streams);
}

/// For a failure's message: each event created since `billing`'s registration that has no
/// `billing` row, when it was created, and when (and with which `delivery_count`) its
/// `audit` row was stored; the fleet's processes as the database last saw them.
async fn unbilled(
    outbox_db: &FleetDb,
    fleet_db: &FleetDb,
    since: &BTreeSet<String>,
) -> Vec<String> {
    let billed: BTreeSet<String> = fleet_db
        .rows::<(String,)>(
            "SELECT CAST(id AS TEXT) FROM {s}inbox_events WHERE subscriber = 'billing'",
        )
        .await
        .into_iter()
        .map(|row| row.0)
        .collect();
    let mut lines = Vec::new();
    for id in since.difference(&billed) {
        let created: Vec<(String,)> = outbox_db
            .rows(&format!(
                "SELECT CAST(created_at AS TEXT) FROM {{s}}outbox_events WHERE id = '{id}'"
            ))
            .await;
        let audit: Vec<(String, i64)> = fleet_db
            .rows(&format!(
                "SELECT CAST(received_at AS TEXT), CAST(delivery_count AS BIGINT)                  FROM {{s}}inbox_events WHERE id = '{id}' AND subscriber = 'audit'"
            ))
            .await;
        lines.push(format!(
            "{id}: created {created:?}, audit row received (at, deliveries) {audit:?}"
        ));
    }
    let processes: Vec<(String, String, String)> = fleet_db
        .rows(
            "SELECT process, subscriber, CAST(started_at AS TEXT) FROM {s}subscription_processes \
             ORDER BY started_at, process, subscriber",
        )
        .await;
    lines.push(format!(
        "processes (process, subscriber, started at): {processes:?}"
    ));
    lines
}

/// Stops `old` gracefully (SIGTERM, exit 0), saying when.
async fn stop(old: &mut Service, started: Instant) {
    let at = started.elapsed();
    old.terminate().await;
    eprintln!(
        "{} stopped gracefully at {at:?} in {:?}",
        old.name(),
        started.elapsed() - at
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_deploy_in_process_loses_nothing_and_runs_nothing_twice() {
    rolling_deploy(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_deploy_over_nats_loses_nothing_and_runs_nothing_twice() {
    rolling_deploy(Some(&nats_url())).await;
}
