//! A mixed fleet on one database, in-process transport (issue 14, item 7; contract items
//! 7 and 9): two OS processes of different versions share the boxes, on SQLite (one file)
//! and on PostgreSQL (a fresh schema).
//!
//! - `new-b`, the new version, subscribes `audit` and `billing` to `fleet.Noted` and
//!   handles the commands `fleet.Ship` (`ship`) and `fleet.Refund` (`refund`). It starts
//!   first, so its subscriptions are in the `subscriptions` table before anything is
//!   emitted.
//! - `old-a`, the old version, subscribes only `audit` and handles only `fleet.Ship`.
//! - Once both print `ready`, both are told `go` and emit at once, each in transactions of
//!   its own: 100 `fleet.Noted` and 30 `fleet.Ship` from each, 30 `fleet.Refund` from
//!   `new-b`. Both relays run, so either may move a message to the inbox, including the
//!   old one, which has no `billing` and no `refund` of its own. `billing` takes 300 ms
//!   per run and `audit` 20 ms, so runs overlap and both processes claim at once.
//!
//! Checked from the database once nothing is live (see `common::fleet::Snapshot`): every
//! event reached `audit` once and `billing` once, every command its handler once (one
//! COMPLETED inbox row, one handler run recorded outside the transaction, one committed
//! effect per message and subscriber); nothing FAILED, retried or taken over; no inbox row
//! of another subscriber (no `bandeja.rejected`); no handler ran twice. A sampler reads who
//! holds PROCESSING inbox rows every 125 ms: `old-a` never held a `billing` or `refund`
//! row, and the runs table shows it ran only `audit` and `ship` — and that it did take part.

mod common;

use std::time::{Duration, Instant};

use bandeja::Payload;
use bandeja_scale_tests::fleet::{Noted, Refund, Ship};
use common::fleet::{args, node, wait_settled, FleetDb, Route};

/// `fleet.Noted` emitted by each process.
const NOTED_EACH: u64 = 100;
/// `fleet.Ship` emitted by each process; `fleet.Refund` emitted by the new one.
const COMMANDS_EACH: u64 = 30;
/// The longest the run may take to settle once emission is over.
const SETTLE: Duration = Duration::from_secs(45);

async fn two_versions(db: FleetDb, store: &str) {
    let started = Instant::now();
    let sampler = db.sampler();
    let emit = |extra: &[&str]| {
        let mut flags = db.store_args();
        flags.extend(args(&["--slow", "audit=20", "--slow", "billing=300"]));
        flags.extend(args(&["--emit-every", "10", "--wait-for-go"]));
        flags.extend(args(extra));
        flags
    };
    let (noted, ship, refund) = (
        format!("noted={NOTED_EACH}"),
        format!("ship={COMMANDS_EACH}"),
        format!("refund={COMMANDS_EACH}"),
    );
    let mut new = node(
        "new-b",
        &emit(&[
            "--on-event",
            "audit:noted",
            "--on-event",
            "billing:noted",
            "--on-command",
            "ship:ship",
            "--on-command",
            "refund:refund",
            "--emit",
            &noted,
            "--emit",
            &ship,
            "--emit",
            &refund,
        ]),
    );
    let mut old = node(
        "old-a",
        &emit(&[
            "--on-event",
            "audit:noted",
            "--on-command",
            "ship:ship",
            "--emit",
            &noted,
            "--emit",
            &ship,
        ]),
    );
    let subscriptions = db.subscriptions().await;
    for (kind, message_type, subscriber) in [
        ("event", Noted::TYPE, "audit"),
        ("event", Noted::TYPE, "billing"),
        ("command", Ship::TYPE, "ship"),
        ("command", Refund::TYPE, "refund"),
    ] {
        assert!(
            subscriptions.contains(&(kind.into(), message_type.into(), subscriber.into())),
            "{store}: {subscriber} is registered before emission; subscriptions: {subscriptions:?}"
        );
    }
    new.say("go");
    old.say("go");
    new.expect_line("emitted", Duration::from_secs(60));
    old.expect_line("emitted", Duration::from_secs(60));
    let routes = [
        Route::every(Noted::TYPE, "audit"),
        Route::every(Noted::TYPE, "billing"),
        Route::every(Ship::TYPE, "ship"),
        Route::every(Refund::TYPE, "refund"),
    ];
    let snapshot = wait_settled(&[&db], &db, &routes, SETTLE).await;
    let elapsed = started.elapsed();
    old.terminate().await;
    new.terminate().await;
    let (held, samples) = sampler.finish().await;

    let expected = usize::try_from(2 * NOTED_EACH + 3 * COMMANDS_EACH).expect("small");
    assert_eq!(
        snapshot.outbox.len(),
        expected,
        "{store}: every emission is in the outbox"
    );
    assert!(
        samples >= 10 && held.iter().any(|(subscriber, _)| subscriber == "billing"),
        "{store}: the sampler saw the claims ({samples} samples, holders {held:?})"
    );
    let problems = snapshot.problems(&routes);
    assert!(problems.is_empty(), "{store}: {problems:#?}");
    let by_worker = snapshot.runs_by_worker();
    let old_ran: Vec<&String> = by_worker
        .keys()
        .filter(|(_, worker)| worker == "old-a")
        .map(|(subscriber, _)| subscriber)
        .collect();
    assert!(
        old_ran.iter().all(|s| *s == "audit" || *s == "ship"),
        "{store}: old-a ran only its own subscribers; runs per (subscriber, worker): {by_worker:?}"
    );
    assert!(
        by_worker.contains_key(&("audit".to_owned(), "old-a".to_owned())),
        "{store}: the old process took part in `audit`; runs per (subscriber, worker): {by_worker:?}"
    );
    let old_held: Vec<_> = held
        .iter()
        .filter(|(subscriber, worker)| {
            worker == "old-a" && (subscriber == "billing" || subscriber == "refund")
        })
        .collect();
    assert!(
        old_held.is_empty(),
        "{store}: old-a claimed rows of subscribers it does not run: {old_held:?}"
    );
    eprintln!(
        "{store}: {expected} messages to 2 versions settled in {elapsed:?}; runs per \
         (subscriber, worker): {by_worker:?}; holders seen in {samples} samples: {held:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_fleet_on_sqlite_delivers_to_every_subscriber_once() {
    two_versions(FleetDb::sqlite().await, "sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_fleet_on_postgres_delivers_to_every_subscriber_once() {
    let Some(db) = FleetDb::postgres().await else {
        return;
    };
    two_versions(db, "postgres").await;
}
