//! A mixed fleet of one service over a broker (issue 14, items 5 and 7; contract item 9):
//! NATS JetStream (`NATS_URL`, default `nats://127.0.0.1:4222`) and RabbitMQ (`AMQP_URL`,
//! default `amqp://guest:guest@127.0.0.1:5672/%2f`), each run under a stream / exchange
//! prefix of its own (the NATS streams are deleted afterwards; the RabbitMQ queues expire
//! and the exchanges auto-delete).
//!
//! Three OS processes, two PostgreSQL schemas:
//! - `old-a` and `new-b` are two versions of the service `fleet` on one schema. `old-a`
//!   subscribes `audit` to `fleet.Noted` and handles `fleet.Ship`; `new-b` also subscribes
//!   `billing` to `fleet.Noted` and to `fleet.Charged` (a type `old-a` has never heard
//!   of), and handles `fleet.Refund` too. `old-a` starts first, then `new-b`: on RabbitMQ
//!   the service's queues are single-active-consumer, so `old-a` stays the one consumer of
//!   every queue and receives every message, the new types included; on NATS the two
//!   processes pull from the service's shared durable consumers.
//! - `producer` (service `fleet-producer`, the other schema) starts once both are ready and
//!   emits 100 `fleet.Noted`, 50 `fleet.Charged`, 30 `fleet.Ship` and 30 `fleet.Refund`
//!   (commands to `fleet`), one per transaction.
//!
//! Checked once nothing is live in either schema (see `common::fleet::Snapshot`): every
//! message in the producer's outbox reached every subscription of `fleet` for its type
//! exactly once — one COMPLETED inbox row, one handler run (recorded outside the
//! transaction), one committed effect — and no other; nothing FAILED, retried or taken
//! over, no `bandeja.rejected` row (the receiving process stores rows for the subscriptions
//! registered in the database, not for its own handlers only); `old-a` never held or ran a
//! `billing` or `refund` row.
//!
//! The tests fail when the broker is unreachable in CI (`CI=true`) and are skipped after a
//! notice otherwise.

mod common;

use std::time::{Duration, Instant};

use bandeja::Payload;
use bandeja_scale_tests::fleet::{Charged, Noted, Refund, Ship};
use common::fleet::{
    amqp_url, args, broker_node_flags, nats_url, node, reach_amqp, reach_nats, wait_settled,
    FleetDb, Route,
};

/// The longest the run may take to settle once the producer is done.
const SETTLE: Duration = Duration::from_secs(45);

/// The broker under test.
struct Broker {
    /// `nats` or `amqp`.
    transport: &'static str,
    url: String,
}

/// One broker test at a time: together their six processes would hold too many of the
/// PostgreSQL server's connections.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn one_service_two_versions(broker: Broker) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let prefix = format!("fleet{:08x}", rand::random::<u32>());
    let streams = if broker.transport == "nats" {
        let Some(streams) = reach_nats(&broker.url, &prefix).await else {
            return;
        };
        Some(streams)
    } else {
        if reach_amqp(&broker.url, &prefix).await.is_none() {
            return;
        }
        None
    };
    let (Some(consumer_db), Some(producer_db)) =
        (FleetDb::postgres().await, FleetDb::postgres().await)
    else {
        return;
    };
    let started = Instant::now();
    let on = |db: &FleetDb, service: &str, extra: &[&str]| {
        let mut flags = broker_node_flags(
            db,
            broker.transport,
            &broker.url,
            &prefix,
            service,
            &["--command-target", "fleet"],
        );
        flags.extend(args(extra));
        flags
    };
    let sampler = consumer_db.sampler();
    let mut old = node(
        "old-a",
        &on(
            &consumer_db,
            "fleet",
            &["--on-event", "audit:noted", "--on-command", "ship:ship"],
        ),
    );
    let mut new = node(
        "new-b",
        &on(
            &consumer_db,
            "fleet",
            &[
                "--on-event",
                "audit:noted",
                "--on-event",
                "billing:noted",
                "--on-event",
                "billing:charged",
                "--on-command",
                "ship:ship",
                "--on-command",
                "refund:refund",
                "--slow",
                "billing=100",
            ],
        ),
    );
    let mut producer = node(
        "producer",
        &on(
            &producer_db,
            "fleet-producer",
            &[
                "--emit",
                "noted=100",
                "--emit",
                "charged=50",
                "--emit",
                "ship=30",
                "--emit",
                "refund=30",
                "--emit-every",
                "10",
            ],
        ),
    );
    producer.expect_line("emitted", Duration::from_secs(60));
    let routes = [
        Route::every(Noted::TYPE, "audit"),
        Route::every(Noted::TYPE, "billing"),
        Route::every(Charged::TYPE, "billing"),
        Route::every(Ship::TYPE, "ship"),
        Route::every(Refund::TYPE, "refund"),
    ];
    let snapshot = wait_settled(&[&producer_db], &consumer_db, &routes, SETTLE).await;
    let elapsed = started.elapsed();
    producer.terminate().await;
    old.terminate().await;
    new.terminate().await;
    let (held, samples) = sampler.finish().await;

    let transport = broker.transport;
    assert_eq!(
        snapshot.outbox.len(),
        210,
        "{transport}: every emission is in the outbox"
    );
    assert!(
        samples >= 10 && held.iter().any(|(subscriber, _)| subscriber == "billing"),
        "{transport}: the sampler saw the claims ({samples} samples, holders {held:?})"
    );
    let problems = snapshot.problems(&routes);
    assert!(problems.is_empty(), "{transport}: {problems:#?}");
    let by_worker = snapshot.runs_by_worker();
    for (subscriber, worker) in by_worker.keys().chain(held.iter()) {
        assert!(
            worker != "old-a" || subscriber == "audit" || subscriber == "ship",
            "{transport}: old-a held or ran a row of `{subscriber}`, which it does not run; \
             runs per (subscriber, worker): {by_worker:?}; holders seen: {held:?}"
        );
    }
    let services: Vec<(String, String)> = consumer_db
        .rows("SELECT DISTINCT subscriber, service FROM {s}subscriptions ORDER BY 1, 2")
        .await;
    assert!(
        services.iter().all(|(_, service)| service == "fleet"),
        "{transport}: the consumers' subscriptions belong to `fleet`: {services:?}"
    );
    eprintln!(
        "{transport}: 210 messages to 2 versions of one service settled in {elapsed:?}; runs \
         per (subscriber, worker): {by_worker:?}; holders seen in {samples} samples: {held:?}"
    );
    drop(streams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_fleet_over_nats_delivers_to_every_subscriber_once() {
    one_service_two_versions(Broker {
        transport: "nats",
        url: nats_url(),
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_fleet_over_rabbitmq_delivers_to_every_subscriber_once() {
    one_service_two_versions(Broker {
        transport: "amqp",
        url: amqp_url(),
    })
    .await;
}
