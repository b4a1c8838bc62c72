//! The runtime's life: startup errors, a worker switched off, graceful shutdown.

use std::time::Duration;

use bandeja_core::config::Enabled;
use bandeja_core::error::{BuildErrorKind, Error};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;

use super::recorder::{Behaviour, Recorder};
use super::{all, emit_pings, rows, wait_rows, WAIT};
use crate::fixtures::{fast_config, Ping};

/// A worker switched off does not run: its box keeps its rows.
pub async fn disabled_worker_does_not_run<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let mut config = fast_config();
    config.events_inbox.enabled = Enabled::Off;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    assert!(!bandeja.worker_enabled(BoxKind::InboxEvents));
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    wait_rows(
        &store,
        BoxKind::OutboxEvents,
        all(MessageStatus::Completed, 1),
    )
    .await;
    // The dispatcher woke the inbox; with its worker off, the row must not leave PENDING
    // during four polling intervals.
    let left_pending = eventually(Duration::from_millis(400), || async {
        let inbox = rows(&store, BoxKind::InboxEvents).await;
        inbox
            .iter()
            .any(|r| r.message.status != MessageStatus::Pending)
            .then_some(())
    })
    .await;
    running.shutdown().await;
    assert!(
        left_pending.is_err(),
        "the inbox row was processed by a disabled worker"
    );
    assert_eq!(
        rows(&store, BoxKind::InboxEvents).await[0].message.status,
        MessageStatus::Pending
    );
    assert_eq!(recorder.attempts(), 0);
}

/// Two subscribers with one name for one type is a startup error.
pub async fn duplicate_subscriber_is_a_startup_error<S: Inspect>(store: S) {
    let result = Bandeja::builder(store)
        .on_event::<Ping, _>("inventory", Recorder::new(Behaviour::Succeed))
        .on_event::<Ping, _>("inventory", Recorder::new(Behaviour::Succeed))
        .build();
    assert!(
        matches!(result, Err(Error::Build(ref e)) if e.kind() == BuildErrorKind::DuplicateSubscriber && e.subscriber() == Some("inventory"))
    );
}

/// Shutdown waits for the batch in hand to finish.
pub async fn graceful_shutdown_finishes_the_batch_in_hand<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Pause(Duration::from_millis(300)));
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    eventually(WAIT, || async { (recorder.attempts() == 1).then_some(()) })
        .await
        .expect("handler started");
    running.shutdown().await;
    assert_eq!(
        rows(&store, BoxKind::InboxEvents).await[0].message.status,
        MessageStatus::Completed
    );
}

/// A batch that cannot finish in time is released to PENDING without spending retries.
pub async fn graceful_shutdown_releases_a_batch_that_cannot_finish<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Hang);
    let mut config = fast_config();
    config.events_inbox.lock_at_most_for = Duration::from_secs(4);
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    eventually(WAIT, || async { (recorder.attempts() == 1).then_some(()) })
        .await
        .expect("handler started");
    running.shutdown().await;
    let row = &rows(&store, BoxKind::InboxEvents).await[0];
    assert_eq!(
        (
            row.message.status,
            row.message.retry_count,
            row.locked_by.clone()
        ),
        (MessageStatus::Pending, 0, None)
    );
}
