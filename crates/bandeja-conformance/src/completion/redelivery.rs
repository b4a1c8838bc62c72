//! Inbox dedup after completion removed the row: a redelivery after `delete` or `archive` is
//! absorbed until the dedup window passes.

use std::time::Duration;

use bandeja_core::config::{CompletionMode, Enabled};
use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::runtime::Bandeja;
use bandeja_core::store::{Delivery, Inspect};
use bandeja_core::testing::eventually;

use super::{archived, config_with, Counter, WAIT};
use crate::fixtures::Ping;
use crate::store::ping;

/// `delete`: a redelivery is absorbed after the row was deleted, until the window passes.
pub async fn redelivery_after_delete_is_absorbed_until_the_window_passes<S: Inspect>(store: S) {
    redelivery_is_absorbed(store, CompletionMode::Delete).await;
}

/// `archive`: a redelivery is absorbed after the row was archived, until the window passes.
pub async fn redelivery_after_archive_is_absorbed_until_the_window_passes<S: Inspect>(store: S) {
    redelivery_is_absorbed(store, CompletionMode::Archive).await;
}

/// The inbox row is gone after completion, yet a redelivery of the same `(id, subscriber)`
/// is a duplicate and never reaches the handler again — until retention removes the dedup
/// record: then it is a new message (documented in `docs/operations.md`).
async fn redelivery_is_absorbed<S: Inspect>(store: S, mode: CompletionMode) {
    let counter = Counter::default();
    let mut config = config_with(mode);
    config.events_outbox.enabled = Enabled::Off; // deliveries come "from a broker"
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", counter.clone())
        .build()
        .expect("build");
    let store = bandeja.store().clone(); // the handle configured with the modes
    let running = bandeja.start().await.expect("start");
    let record = ping(7, "k");
    let subscribers = vec!["s".to_owned()];
    let deliver = || async {
        let delivery = Delivery {
            record: &record,
            subscribers: &subscribers,
        };
        let report = store
            .receive(MessageKind::Event, &[delivery])
            .await
            .expect("receive");
        store.wakers().wake(BoxKind::InboxEvents);
        (report.inserted, report.duplicates)
    };
    assert_eq!(deliver().await, (1, 0));
    crate::runtime::wait_rows(&store, BoxKind::InboxEvents, |rows| rows.is_empty()).await;
    assert_eq!(counter.seen(), vec![7]);

    // Redelivered twice after its row was removed: absorbed, no new row.
    assert_eq!(deliver().await, (0, 1));
    assert_eq!(deliver().await, (0, 1));
    // A marker handled after any redelivery would have been.
    let marker = ping(8, "k");
    let report = store
        .receive(
            MessageKind::Event,
            &[Delivery {
                record: &marker,
                subscribers: &subscribers,
            }],
        )
        .await
        .expect("receive");
    assert_eq!(report.inserted, 1);
    store.wakers().wake(BoxKind::InboxEvents);
    eventually(WAIT, || async { (counter.seen().len() == 2).then_some(()) })
        .await
        .expect("marker handled");
    crate::runtime::wait_rows(&store, BoxKind::InboxEvents, |rows| rows.is_empty()).await;
    assert_eq!(counter.seen(), vec![7, 8]);
    let archived_ids: Vec<_> = archived(&store, BoxKind::InboxEvents)
        .await
        .iter()
        .map(|r| r.message.record.id)
        .collect();
    if mode == CompletionMode::Archive {
        assert_eq!(archived_ids, vec![record.id, marker.id]);
    } else {
        assert!(archived_ids.is_empty());
    }

    // Past the retention window the dedup record is gone: a redelivery is a new message.
    let purged = store
        .purge_completed(BoxKind::InboxEvents, Duration::ZERO)
        .await
        .expect("purge");
    assert_eq!(purged, 2, "the two dedup records");
    assert_eq!(deliver().await, (1, 0));
    eventually(WAIT, || async { (counter.seen().len() == 3).then_some(()) })
        .await
        .expect("handled again");
    running.shutdown().await;
    assert_eq!(counter.seen(), vec![7, 8, 7]);
}
