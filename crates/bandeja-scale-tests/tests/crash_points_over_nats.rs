//! Crash at the named points of the broker path (issue: chaos suite, item 3), with a
//! producer and a consumer `pair-service` (separate schemas) over the local NATS server:
//! the producer aborts after JetStream acknowledged a batch but before marking its outbox
//! rows; the consumer aborts after storing received messages but before acknowledging
//! them. Each is restarted without the crash point; every message is handled exactly once
//! in effect and every row ends COMPLETED (the re-published batch is dropped by JetStream's
//! dedup or absorbed by the inbox; the unacknowledged one is redelivered and absorbed).
//! Uses `NATS_URL` (default `nats://127.0.0.1:4222`).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use common::pair::{service_args, Broker, Service};
use common::{try_fresh, Fresh};

const EVENTS: i64 = 300;
const COMMANDS: i64 = 30;
const TIMEOUT: Duration = Duration::from_secs(90);

/// The machine's NATS server, never stopped here.
struct LocalNats;

impl Broker for LocalNats {
    fn transport(&self) -> &'static str {
        "nats"
    }
    fn url(&self) -> String {
        std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
    }
    fn stop(&mut self) {
        unreachable!("the shared server is never stopped by these tests")
    }
    fn start(&mut self) {}
}

fn producer_args(prefix: &str, fresh: &Fresh) -> Vec<String> {
    let mut args = service_args(&LocalNats, "producer", prefix, fresh);
    for (flag, value) in [
        ("--events", EVENTS.to_string()),
        ("--commands", COMMANDS.to_string()),
        ("--emit-batch", EVENTS.to_string()),
        ("--emit-every", "0".to_owned()),
    ] {
        args.push(flag.to_owned());
        args.push(value);
    }
    args
}

/// Emitted so far by the producer (what the consumer must end up handling).
async fn emitted(producer: &Fresh) -> i64 {
    producer.count("outbox_events").await + producer.count("outbox_commands").await
}

async fn settle(producer: &Fresh, consumer: &Fresh, expected: i64) {
    consumer.wait_count("effects", expected, TIMEOUT).await;
    for (db, from) in [
        (producer, "outbox_events"),
        (producer, "outbox_commands"),
        (consumer, "inbox_events"),
        (consumer, "inbox_commands"),
    ] {
        db.wait_count(
            &format!("{from} WHERE status = 'COMPLETED'"),
            db.count(from).await,
            TIMEOUT,
        )
        .await;
    }
    assert_eq!(
        consumer.count("violations").await,
        0,
        "nothing applied twice"
    );
    assert_eq!(consumer.count("effects").await, expected, "nothing lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_crash_between_publish_and_mark_republishes_without_double_effects() {
    let (Some(producer_db), Some(consumer_db)) = (try_fresh().await, try_fresh().await) else {
        return;
    };
    let prefix = format!("crash{:06x}", rand::random::<u32>() & 0xff_ffff);
    let mut consumer = Service::start(
        "consumer",
        &service_args(&LocalNats, "consumer", &prefix, &consumer_db),
    );
    let mut crasher = Service::start_with(
        "producer",
        &producer_args(&prefix, &producer_db),
        &[("BANDEJA_CRASH_AT", "after-publish-before-mark")],
    );
    let status = crasher.exited(TIMEOUT).await;
    assert_eq!(status.signal(), Some(6), "the producer aborted: {status}");
    let unmarked = producer_db
        .count("outbox_events WHERE status = 'PROCESSING'")
        .await
        + producer_db
            .count("outbox_commands WHERE status = 'PROCESSING'")
            .await;
    assert!(unmarked > 0, "it died holding published, unmarked rows");
    let mut restarted = Service::start(
        "producer",
        &service_args(&LocalNats, "producer", &prefix, &producer_db),
    );
    settle(&producer_db, &consumer_db, emitted(&producer_db).await).await;
    restarted.terminate().await;
    consumer.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_crash_between_inbox_insert_and_ack_is_redelivered_and_absorbed() {
    let (Some(producer_db), Some(consumer_db)) = (try_fresh().await, try_fresh().await) else {
        return;
    };
    let prefix = format!("crash{:06x}", rand::random::<u32>() & 0xff_ffff);
    let consumer_args = service_args(&LocalNats, "consumer", &prefix, &consumer_db);
    let mut crasher = Service::start_with(
        "consumer",
        &consumer_args,
        &[("BANDEJA_CRASH_AT", "after-inbox-insert-before-ack")],
    );
    let mut producer = Service::start("producer", &producer_args(&prefix, &producer_db));
    let status = crasher.exited(TIMEOUT).await;
    assert_eq!(status.signal(), Some(6), "the consumer aborted: {status}");
    let stored =
        consumer_db.count("inbox_events").await + consumer_db.count("inbox_commands").await;
    assert!(stored > 0, "it died with stored, unacknowledged messages");
    let mut restarted = Service::start("consumer", &consumer_args);
    settle(&producer_db, &consumer_db, EVENTS + COMMANDS).await;
    // Everything may be handled before the broker gives up on the dead consumer's
    // unacknowledged messages (its ack wait, 30 s): wait for the redelivery itself.
    let redelivered = bandeja::testing::eventually(Duration::from_secs(90), || async {
        let again: i64 = consumer_db
            .scalar(
                "SELECT count(*) FROM (SELECT delivery_count FROM {s}.inbox_events UNION ALL \
                   SELECT delivery_count FROM {s}.inbox_commands) AS d WHERE delivery_count > 1",
            )
            .await;
        (again > 0).then_some(again)
    })
    .await;
    assert!(
        redelivered.is_ok(),
        "what it stored before dying came again and was absorbed"
    );
    // Absorbed: nothing was applied twice, nothing is left.
    settle(&producer_db, &consumer_db, EVENTS + COMMANDS).await;
    restarted.terminate().await;
    producer.terminate().await;
}
