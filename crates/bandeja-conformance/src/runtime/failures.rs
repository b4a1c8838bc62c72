//! Failing handlers: retries with backoff, permanent errors, panics, a poison message that
//! fails alone, a handler that completes on a retry, a command nobody handles.

use bandeja_core::config::Enabled;
use bandeja_core::envelope::Command;
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView};
use bandeja_core::tenant::{self, TenantId};

use super::recorder::{Behaviour, Recorder};
use super::{all, emit_pings, wait_rows};
use crate::fixtures::{fast_config, Archive, Ping};

/// Retries with backoff until `max-retries`, then FAILED with the handler's error.
pub async fn failing_handler_retries_with_backoff_then_fails_with_its_error<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Fail);
    let mut config = fast_config();
    config.events_inbox.max_retries = 2;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    let rows = wait_rows(&store, BoxKind::InboxEvents, all(MessageStatus::Failed, 1)).await;
    running.shutdown().await;
    assert_eq!(rows[0].message.retry_count, 2);
    assert!(
        rows[0]
            .message
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("boom")),
        "{:?}",
        rows[0].message.last_error
    );
    assert_eq!(recorder.attempts(), 3, "first attempt + 2 retries");
    assert_eq!(recorder.count(), 0);
}

/// A permanent error goes to FAILED without retries.
pub async fn permanent_error_fails_at_once<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::FailPermanently);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    let rows = wait_rows(&store, BoxKind::InboxEvents, all(MessageStatus::Failed, 1)).await;
    running.shutdown().await;
    assert_eq!((recorder.attempts(), rows[0].message.retry_count), (1, 0));
    assert!(rows[0]
        .message
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("bad data")));
}

/// A panic is a failed attempt; the worker goes on with other messages, and other keys and
/// subscribers are not held up by the panicking one (checked by `poison_fails_alone`).
pub async fn panicking_handler_counts_as_a_failure_and_the_worker_survives<S: Inspect>(store: S) {
    poison_fails_alone(
        store,
        Behaviour::PanicOn(0),
        &["handler panicked", "handler bug on 0"],
    )
    .await;
}

/// A handler that fails on every attempt of one message ends FAILED after `max-retries`
/// with its error; every other message and subscriber completes (checked by
/// `poison_fails_alone`).
pub async fn always_failing_handler_fails_alone_after_max_retries<S: Inspect>(store: S) {
    poison_fails_alone(store, Behaviour::FailOn(0), &["always fails on 0"]).await;
}

/// Subscriber `s` behaves as `poison` on message 0; `other` takes every message. Messages 1
/// and 2 have keys of their own, message 3 shares message 0's key. Checks that:
/// - `(s, 0)` is tried 1 + `max-retries` times and ends FAILED with the error (every part of
///   `error_parts` in `last_error`), its lease released;
/// - every other row completes on its first attempt, each handled once;
/// - the other keys were handled before the poison's first retry (they waited for none of
///   its backoffs), and message 3 only after the poison's last attempt (per-key order: a
///   failing message delays its own key, then releases it when it fails for good).
async fn poison_fails_alone<S: Inspect>(store: S, poison: Behaviour, error_parts: &[&str]) {
    let (s, other) = (Recorder::new(poison), Recorder::new(Behaviour::Succeed));
    let mut config = fast_config();
    config.events_inbox.max_retries = 2;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", s.clone())
        .on_event::<Ping, _>("other", other.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let ids = emit_pings(&store, 0..4, |n| format!("k{}", n % 3)).await;
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.len() == 8 && rows.iter().all(|r| r.message.status.is_terminal())
    })
    .await;
    running.shutdown().await;
    let is_poison =
        |r: &RowView| r.message.subscriber.as_deref() == Some("s") && r.message.record.id == ids[0];
    let poisoned: Vec<_> = rows.iter().filter(|r| is_poison(r)).collect();
    assert_eq!(poisoned.len(), 1);
    let failed = &poisoned[0];
    assert_eq!(
        (
            failed.message.status,
            failed.message.retry_count,
            failed.locked_by.as_deref()
        ),
        (MessageStatus::Failed, 2, None)
    );
    let error = failed.message.last_error.clone().unwrap_or_default();
    for part in error_parts {
        assert!(error.contains(part), "`{part}` not in last_error `{error}`");
    }
    for row in rows.iter().filter(|r| !is_poison(r)) {
        assert_eq!(
            (row.message.status, row.message.retry_count),
            (MessageStatus::Completed, 0),
            "{:?} {}",
            row.message.subscriber,
            row.message.record.payload
        );
    }
    assert_eq!(s.tries_of(0), vec![0, 1, 2], "first attempt + 2 retries");
    assert_eq!(s.handled(), vec![1, 2, 3]);
    assert_eq!(other.handled(), vec![0, 1, 2, 3]);
    let tried = s.tried();
    let position = |n: u64, retry: u32| tried.iter().position(|t| t.1 == n && t.2 == retry);
    let first_retry = position(0, 1).expect("retried");
    let last_attempt = position(0, 2).expect("retried twice");
    for n in [1, 2] {
        assert!(
            position(n, 0).is_some_and(|p| p < first_retry),
            "key k{n} waited for the poison's retries: {tried:?}"
        );
    }
    assert!(
        position(3, 0).is_some_and(|p| p > last_attempt),
        "message 3 overtook the poison of its key: {tried:?}"
    );
}

/// A handler that fails its first attempts completes on a retry: COMPLETED with the retries
/// it took, each message handled (successfully) exactly once.
pub async fn intermittently_failing_handler_completes_on_a_retry<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::FailAttempts(2));
    let mut config = fast_config();
    config.events_inbox.max_retries = 3;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..3, |n| format!("k{n}")).await;
    let rows = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 3),
    )
    .await;
    running.shutdown().await;
    assert!(
        rows.iter().all(|r| r.message.retry_count == 2),
        "{:?}",
        rows.iter()
            .map(|r| r.message.retry_count)
            .collect::<Vec<_>>()
    );
    for n in 0..3 {
        assert_eq!(recorder.tries_of(n), vec![0, 1, 2], "message {n}");
    }
    assert_eq!(recorder.handled(), vec![0, 1, 2], "each handled once");
}

/// A command nobody handles ends FAILED with an error that says so.
pub async fn command_without_handler_fails_with_a_clear_error<S: Inspect>(store: S) {
    let mut config = fast_config();
    config.commands_outbox.enabled = Enabled::On;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let command = tenant::scope(TenantId::new("acme").expect("tenant"), async {
        Command::to_self("archiver", Archive { n: 1 })
    })
    .await
    .expect("command");
    bandeja.send(&command).await.expect("send");
    let rows = wait_rows(
        &store,
        BoxKind::OutboxCommands,
        all(MessageStatus::Failed, 1),
    )
    .await;
    running.shutdown().await;
    let error = rows[0].message.last_error.clone().unwrap_or_default();
    assert!(
        error.contains("no handler for command type `conformance.Archive`"),
        "{error}"
    );
}
