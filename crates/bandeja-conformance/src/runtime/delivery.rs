//! Delivery: each event reaches each subscriber once, on the in-process path and through a
//! transport that delivers twice; a redelivery never reaches the handler again; the
//! `Scenario` harness waits for the state change.

use std::sync::Arc;

use bandeja_core::envelope::Event;
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Delivery, Inspect};
use bandeja_core::testing::Scenario;

use super::recorder::{Behaviour, Recorder};
use super::{all, emit_pings, rows, wait_rows};
use crate::fixtures::{fast_config, Ping};

/// Every event reaches each of its subscribers exactly once; every row ends COMPLETED.
pub async fn events_reach_every_subscriber_once<S: Inspect>(store: S) {
    let (a, b) = (
        Recorder::new(Behaviour::Succeed),
        Recorder::new(Behaviour::Succeed),
    );
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("inventory", a.clone())
        .on_event::<Ping, _>("notification", b.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let ids = emit_pings(&store, 0..20, |n| format!("k{}", n % 4)).await;
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 40),
    )
    .await;
    running.shutdown().await;
    for recorder in [&a, &b] {
        let mut seen: Vec<_> = recorder
            .seen
            .lock()
            .expect("seen")
            .iter()
            .map(|s| s.0)
            .collect();
        seen.sort();
        assert_eq!(seen, ids, "each subscriber saw each event once");
    }
    assert!(rows(&store, BoxKind::OutboxEvents)
        .await
        .iter()
        .all(|r| r.message.status == MessageStatus::Completed));
}

/// A redelivery of a handled message is absorbed: delivery_count goes up, the handler is not called.
pub async fn redelivered_message_never_reaches_the_handler_again<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    let first = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 1),
    )
    .await;
    let subscribers = vec!["s".to_owned()];
    let record = first[0].message.record.clone();
    let report = store
        .receive(
            bandeja_core::MessageKind::Event,
            &[Delivery {
                record: &record,
                subscribers: &subscribers,
            }],
        )
        .await
        .expect("receive");
    assert_eq!((report.inserted, report.duplicates), (0, 1));
    store.wakers().wake(BoxKind::InboxEvents);
    emit_pings(&store, 1..2, |_| "k".into()).await; // a marker handled after any redelivery would be
    let rows = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 2),
    )
    .await;
    running.shutdown().await;
    assert_eq!(rows[0].message.delivery_count, 2);
    assert_eq!(
        recorder
            .seen
            .lock()
            .expect("seen")
            .iter()
            .map(|s| s.2)
            .collect::<Vec<_>>(),
        vec![0, 1]
    );
}

/// Through a transport (publish with acknowledgement → reception with dedup → processing):
/// a broker that delivers everything twice still gets each message handled once.
pub async fn broker_path_acknowledges_after_storing_and_absorbs_redeliveries<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let transport = bandeja_core::transport::direct::DirectTransport::new().redelivering(2);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .service("svc")
        .transport(Arc::new(transport))
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let ids = emit_pings(&store, 0..5, |n| format!("k{n}")).await;
    // The second copy of a message may arrive after the first was handled: wait for both.
    let completed = all(MessageStatus::Completed, 5);
    let inbox = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        completed(rows) && rows.iter().all(|r| r.message.delivery_count >= 2)
    })
    .await;
    running.shutdown().await;
    assert!(
        inbox.iter().all(|r| r.message.delivery_count == 2),
        "each copy was absorbed"
    );
    let mut seen: Vec<_> = recorder
        .seen
        .lock()
        .expect("seen")
        .iter()
        .map(|s| s.0)
        .collect();
    seen.sort();
    assert_eq!(seen, ids);
    assert!(rows(&store, BoxKind::OutboxEvents)
        .await
        .iter()
        .all(|r| r.message.status == MessageStatus::Completed));
}

/// The Scenario harness: publish, wait for a state change, verify.
pub async fn scenario_waits_for_the_state_change<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let probe = recorder.clone();
    let seen = Scenario::new(&bandeja)
        .publish(Event::new("Ping", "k", Ping { n: 5 }))
        .await
        .expect("publish")
        .and_wait_for_state_change(
            || {
                let probe = probe.clone();
                async move { probe.count() }
            },
            |count| *count > 0,
        )
        .await
        .expect("state change")
        .and_verify(|count| assert_eq!(*count, 1));
    running.shutdown().await;
    assert_eq!(seen, 1);
}
