//! Emission in the runtime: a rolled-back emission is never delivered, a handler's emission
//! commits with its handling only, a commit wakes the workers.

use std::time::Duration;

use bandeja_core::envelope::{Event, Payload};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;

use super::recorder::{Behaviour, Recorder};
use super::{all, emit_pings, rows, wait_rows};
use crate::fixtures::{fast_config, Ping, Pong};

/// A rolled-back emission never reaches a handler.
pub async fn rolled_back_emission_is_never_delivered<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(
            &mut *tx,
            bandeja_core::MessageKind::Event,
            &[
                bandeja_core::MessageRecord::from_event(&Event::new("Ping", "x", Ping { n: 99 }))
                    .expect("record"),
            ],
        )
        .await
        .expect("insert");
    drop(tx);
    emit_pings(&store, 0..1, |_| "y".into()).await;
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 1),
    )
    .await;
    running.shutdown().await;
    assert_eq!(
        recorder
            .seen
            .lock()
            .expect("seen")
            .iter()
            .map(|s| s.2)
            .collect::<Vec<_>>(),
        vec![0]
    );
    assert_eq!(rows(&store, BoxKind::OutboxEvents).await.len(), 1);
}

/// What a handler emits commits with its handling: a failed attempt leaves nothing behind,
/// and the emitted event carries causation and correlation.
pub async fn handler_emission_commits_with_the_handling_only<S: Inspect>(store: S) {
    let mut pinger = Recorder::new(Behaviour::FailFirstAttemptOf(7));
    pinger.emit_pong = true;
    let ponger = Recorder::new(Behaviour::Succeed);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("pinger", pinger.clone())
        .on_event::<Pong, _>("ponger", ponger.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let event = Event::new("Ping", "k", Ping { n: 7 }).with_correlation_id("order-7");
    bandeja.emit(&event).await.expect("emit");
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 2),
    )
    .await;
    running.shutdown().await;
    assert_eq!(pinger.attempts(), 2);
    let outbox = rows(&store, BoxKind::OutboxEvents).await;
    let pongs: Vec<_> = outbox
        .iter()
        .filter(|r| r.message.record.message_type == Pong::TYPE)
        .collect();
    assert_eq!(
        pongs.len(),
        1,
        "the failed attempt's emission was rolled back"
    );
    assert_eq!(pongs[0].message.record.headers.causation_id, Some(event.id));
    assert_eq!(
        pongs[0].message.record.headers.correlation_id.as_deref(),
        Some("order-7")
    );
    assert_eq!(ponger.count(), 1);
}

/// With hour-long polling, an emission is still handled at once: the commit wakes the workers.
pub async fn emission_wakes_the_workers_without_waiting_for_polling<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let mut config = fast_config();
    for group in BoxKind::ALL {
        config.group_mut(group).polling_interval = Duration::from_secs(3600);
    }
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    // The first message may be taken by the workers' first cycle; after it they sleep for
    // an hour unless a commit wakes them.
    emit_pings(&store, 0..1, |_| "a".into()).await;
    eventually(Duration::from_secs(5), || async {
        (recorder.count() == 1).then_some(())
    })
    .await
    .expect("first handled");
    let started = std::time::Instant::now();
    emit_pings(&store, 1..2, |_| "b".into()).await;
    eventually(Duration::from_secs(5), || async {
        (recorder.count() == 2).then_some(())
    })
    .await
    .expect("handled without polling");
    running.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(5));
}
