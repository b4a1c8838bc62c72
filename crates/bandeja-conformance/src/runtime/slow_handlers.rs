//! Slow handlers that do not fail: they run once under renewed leases, are never stopped
//! when a fast subscriber turns slow, and a chunk handing its messages over never waits for
//! its own permit.

use std::time::Duration;

use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView};

use super::recorder::{Behaviour, Recorder};
use super::{all, emit_pings, ping_number, wait_rows};
use crate::fixtures::{fast_config, Ping};

/// Handlers slower than their lease (2.5 s against a lease of 2 s), none failing: the
/// lease is renewed while they run, so each message is handled exactly once, concurrently,
/// with no retry spent and no takeover; no handler is stopped before its own limit.
pub async fn handlers_slower_than_the_lease_run_once_each_under_renewed_leases<S: Inspect>(
    store: S,
) {
    let pause = Duration::from_millis(2500);
    let recorder = Recorder::new(Behaviour::Pause(pause));
    let mut config = fast_config();
    config.events_inbox.lock_at_most_for = Duration::from_secs(2);
    config.events_inbox.retry_backoff_initial = Duration::from_secs(1);
    config.events_inbox.retry_backoff_max = Duration::from_secs(1);
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("slow", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let started = std::time::Instant::now();
    emit_pings(&store, 0..4, |n| format!("k{n}")).await;
    let rows = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 4),
    )
    .await;
    let took = started.elapsed();
    running.shutdown().await;
    assert_eq!(recorder.handled(), vec![0, 1, 2, 3], "each completed once");
    assert!(
        (0..4).all(|n| recorder.tries_of(n).len() == 1),
        "each message entered once: {:?}",
        recorder.tried()
    );
    assert!(
        rows.iter()
            .all(|r| r.message.retry_count == 0 && r.message.takeovers == 0),
        "no retry spent, no takeover: {:?}",
        rows.iter()
            .map(|r| (r.message.retry_count, r.message.takeovers))
            .collect::<Vec<_>>()
    );
    assert!(
        took < pause * 2,
        "the four ran side by side: {took:?} (each takes {pause:?})"
    );
}

/// A subscriber measured fast runs batched; when one of its messages turns out slow
/// (3 s, longer than the patience) inside a batched transaction, it is not stopped: it
/// runs once, to the end, and the messages of its chunk not started yet are handed over
/// to run alone beside it, within the patience.
pub async fn a_fast_subscriber_turned_slow_is_never_stopped_and_holds_up_nobody<S: Inspect>(
    store: S,
) {
    let slow = Duration::from_secs(3);
    let recorder = Recorder::new(Behaviour::PauseOn(20, slow));
    let mut config = fast_config();
    config.events_inbox.retry_backoff_initial = Duration::from_secs(1);
    config.events_inbox.retry_backoff_max = Duration::from_secs(1);
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    // Measured fast first.
    emit_pings(&store, 0..20, |n| format!("k{n}")).await;
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 20),
    )
    .await;
    let emitted_at = std::time::Instant::now();
    emit_pings(&store, 20..40, |n| format!("k{n}")).await;
    let done = |rows: &[RowView], from: u64, to: u64| {
        rows.iter()
            .filter(|r| r.message.status == MessageStatus::Completed)
            .filter(|r| (from..to).contains(&ping_number(r)))
            .count()
            == usize::try_from(to - from).unwrap_or_default()
    };
    wait_rows(&store, BoxKind::InboxEvents, |rows| done(rows, 21, 40)).await;
    let others_took = emitted_at.elapsed();
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| done(rows, 0, 40)).await;
    running.shutdown().await;
    assert!(
        others_took < Duration::from_millis(2500),
        "the messages beside the slow one took {others_took:?}: bound one patience (1 s) and a margin"
    );
    assert_eq!(
        recorder.tries_of(20),
        vec![0],
        "the slow one ran once, to the end"
    );
    assert_eq!(recorder.handled(), (0..40).collect::<Vec<_>>());
    assert!(rows.iter().all(|r| r.message.retry_count == 0));
}

/// With one handler permit, a batched chunk whose first handler is slow (2 s, past the
/// patience) hands the rest over; the chunk gives its permit back as soon as its own run
/// ends, so the handed-over messages get it and complete (they never wait for a permit the
/// chunk keeps while waiting for them).
pub async fn a_chunk_handing_over_never_waits_for_its_own_permit<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::PauseOn(0, Duration::from_secs(2)));
    let mut config = fast_config();
    config.events_inbox.retry_backoff_initial = Duration::from_secs(1);
    config.events_inbox.retry_backoff_max = Duration::from_secs(1);
    config.events_inbox.handler_transaction = bandeja_core::config::HandlerTransaction::Batch;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .handler_concurrency(1)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    emit_pings(&store, 0..6, |n| format!("k{n}")).await;
    let running = bandeja.start().await.expect("start");
    let rows = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 6),
    )
    .await;
    running.shutdown().await;
    assert_eq!(recorder.handled(), (0..6).collect::<Vec<_>>());
    assert_eq!(
        recorder.tries_of(0),
        vec![0],
        "the slow one ran once, to the end"
    );
    assert!(rows.iter().all(|r| r.message.retry_count == 0));
}
