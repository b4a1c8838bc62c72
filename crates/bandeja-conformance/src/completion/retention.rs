//! Retention: old COMPLETED rows purged, by the store and by the runtime's task.

use std::time::Duration;

use bandeja_core::envelope::Event;
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Outcome, Resolution};
use bandeja_core::testing::eventually;

use super::{claim, Counter, WAIT};
use crate::fixtures::{fast_config, Ping};
use crate::store::{emit, ping, rows};

/// Purge removes COMPLETED rows completed at least the given age ago, never younger ones,
/// FAILED or live rows.
pub async fn retention_purges_old_completed_rows_only<S: Inspect>(store: S) {
    let records: Vec<_> = (0..4).map(|n| ping(n, &format!("k{n}"))).collect();
    emit(&store, &records).await;
    let claimed = claim(&store, BoxKind::OutboxEvents, 3).await;
    let outcomes: Vec<Outcome> = claimed
        .iter()
        .map(|m| Outcome {
            id: m.record.id,
            subscriber: None,
            resolution: if m.record.id == records[2].id {
                Resolution::Failed {
                    retry_count: 0,
                    error: "kept".into(),
                }
            } else {
                Resolution::Completed
            },
        })
        .collect();
    store
        .resolve(BoxKind::OutboxEvents, "w", &outcomes)
        .await
        .expect("resolve");
    let young = store
        .purge_completed(BoxKind::OutboxEvents, Duration::from_secs(3_600))
        .await
        .expect("purge");
    assert_eq!(young, 0, "rows completed just now are younger than an hour");
    assert_eq!(rows(&store, BoxKind::OutboxEvents).await.len(), 4);
    let purged = store
        .purge_completed(BoxKind::OutboxEvents, Duration::ZERO)
        .await
        .expect("purge");
    assert_eq!(purged, 2);
    let left: Vec<_> = rows(&store, BoxKind::OutboxEvents)
        .await
        .into_iter()
        .map(|r| (r.message.record.id, r.message.status))
        .collect();
    assert_eq!(
        left,
        vec![
            (records[2].id, MessageStatus::Failed),
            (records[3].id, MessageStatus::Pending)
        ]
    );
}

/// With `retention` set, the runtime's task purges COMPLETED rows by itself.
pub async fn retention_task_purges_completed_rows_in_the_runtime<S: Inspect>(store: S) {
    let counter = Counter::default();
    let mut config = fast_config();
    config.events_outbox.retention = Some(Duration::from_millis(300));
    config.events_inbox.retention = Some(Duration::from_millis(300));
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", counter.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    bandeja
        .emit(&Event::new("Ping", "k", Ping { n: 1 }))
        .await
        .expect("emit");
    eventually(WAIT, || async { (counter.seen().len() == 1).then_some(()) })
        .await
        .expect("handled");
    crate::runtime::wait_rows(&store, BoxKind::InboxEvents, |rows| rows.is_empty()).await;
    crate::runtime::wait_rows(&store, BoxKind::OutboxEvents, |rows| rows.is_empty()).await;
    running.shutdown().await;
    assert_eq!(counter.seen(), vec![1]);
}
