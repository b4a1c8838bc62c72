//! Progress under the completion modes that remove rows: archived rows count as progress, a
//! stuck box is failed in `delete` mode.

use std::time::Duration;

use bandeja_core::config::{CompletionMode, CompletionModes};
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Resolution};

use super::{claim_one, fail_stale, past_the_threshold, resolve, statuses};
use crate::fixtures::receive_events;
use crate::store::{emit, ping, rows};

/// In `archive` mode a completed row moves into the archive: its `archived_at` is the
/// box's progress (outbox and inbox); once nothing is archived for a threshold, the
/// waiting rows are FAILED.
pub async fn archived_rows_are_progress_in_archive_mode<S: Inspect>(store: S) {
    let modes = CompletionModes::default()
        .with(BoxKind::OutboxEvents, CompletionMode::Archive)
        .with(BoxKind::InboxEvents, CompletionMode::Archive);
    let store = store.with_completion(modes).expect("archive mode");
    emit(&store, &[ping(0, "a"), ping(1, "b")]).await;
    let (first, second) = (ping(2, "c"), ping(3, "d"));
    let subscribers = vec!["s".to_owned()];
    receive_events(&store, [&first, &second], &subscribers).await;
    past_the_threshold().await;
    for box_kind in [BoxKind::OutboxEvents, BoxKind::InboxEvents] {
        let done = claim_one(&store, box_kind, Duration::from_secs(30)).await;
        resolve(&store, box_kind, &done, Resolution::Completed).await;
        assert_eq!(
            rows(&store, box_kind).await.len(),
            1,
            "{box_kind}: archived"
        );
        assert_eq!(fail_stale(&store, box_kind).await, (0, 0), "{box_kind}");
    }
    past_the_threshold().await;
    for box_kind in [BoxKind::OutboxEvents, BoxKind::InboxEvents] {
        assert_eq!(fail_stale(&store, box_kind).await, (1, 0), "{box_kind}");
    }
}

/// In `delete` mode a box where nothing moves is failed as in the other modes.
pub async fn a_stuck_box_is_failed_in_delete_mode<S: Inspect>(store: S) {
    let modes = CompletionModes::default().with(BoxKind::OutboxEvents, CompletionMode::Delete);
    let store = store.with_completion(modes).expect("delete mode");
    let records = vec![ping(0, "a"), ping(1, "b")];
    emit(&store, &records).await;
    let held = claim_one(&store, BoxKind::OutboxEvents, Duration::from_secs(3_600)).await;
    past_the_threshold().await;
    assert_eq!(
        fail_stale(&store, BoxKind::OutboxEvents).await,
        (0, 0),
        "a live lease keeps the box alive"
    );
    resolve(&store, BoxKind::OutboxEvents, &held, Resolution::Completed).await;
    past_the_threshold().await;
    assert_eq!(fail_stale(&store, BoxKind::OutboxEvents).await, (1, 0));
    assert_eq!(
        statuses(&store, BoxKind::OutboxEvents).await,
        vec![(
            records[1].id,
            None,
            MessageStatus::Failed,
            Some("stale pending".to_owned())
        )]
    );
}
