//! Purge and archive in the `Admin` suite: old COMPLETED rows only, counted up to the
//! horizon; the archive read back by the store's own reader.

use std::future::Future;

use chrono::Utc;

use bandeja_core::admin::Admin;
use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Delivery, Resolution};

use super::{claim_all, fixture, outcome, record, row, ArchivedRow, ACME};
use crate::store::{emit, request, rows};

/// Purge deletes COMPLETED rows completed before the cut-off, in as many batches as it takes.
pub async fn purge_deletes_old_completed_rows_only<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let past = Utc::now() - chrono::Duration::hours(1);
    let future = Utc::now() + chrono::Duration::hours(1);
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, past)
            .await
            .expect("purge"),
        0
    );
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, future)
            .await
            .expect("purge"),
        1
    );
    let left = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(left.len(), 5);
    assert!(left.iter().all(|r| r.message.record.id != f.a_done.id));
    assert_eq!(
        rows(&store, BoxKind::InboxEvents).await.len(),
        2,
        "other boxes untouched"
    );
    assert_eq!(
        store
            .purge(BoxKind::InboxEvents, future)
            .await
            .expect("purge"),
        1
    );

    let many: Vec<_> = (100..2600).map(|n| record(n, ACME)).collect();
    emit(&store, &many).await;
    let request = bandeja_core::store::ClaimRequest {
        ordered: false,
        ..request("w", 5000)
    };
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request)
        .await
        .expect("claim");
    let done: Vec<_> = claimed
        .iter()
        .filter(|m| m.record.id != f.a_processing.id && m.record.id != f.g_failed.id)
        .filter(|m| many.iter().any(|r| r.id == m.record.id))
        .map(|m| outcome(m.record.id, None, Resolution::Completed))
        .collect();
    assert_eq!(done.len(), 2500);
    store
        .resolve(BoxKind::OutboxEvents, "w", &done)
        .await
        .expect("resolve");
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, future)
            .await
            .expect("purge"),
        2500
    );
    assert_eq!(rows(&store, BoxKind::OutboxEvents).await.len(), 5);
}

/// The horizon is compared with `completed_at` as the store records it: a row recorded as
/// completed at `c` survives a horizon of `c` and goes with any later horizon, even one in
/// the same millisecond (`older_than = 0s` right after a completion must take that row).
pub async fn purge_and_archive_count_a_row_completed_just_before_the_horizon<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let done = row(&store, BoxKind::OutboxEvents, f.a_done.id, None).await;
    let completed_at = done.completed_at.expect("a COMPLETED row has completed_at");
    let just_after = completed_at + chrono::Duration::nanoseconds(1);
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, completed_at)
            .await
            .expect("purge"),
        0,
        "completed at the horizon is not before it"
    );
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, just_after)
            .await
            .expect("purge"),
        1,
        "completed 1ns before the horizon"
    );
    let inbox = row(
        &store,
        BoxKind::InboxEvents,
        f.received.id,
        Some("inventory"),
    )
    .await;
    let completed_at = inbox
        .completed_at
        .expect("a COMPLETED row has completed_at");
    assert_eq!(
        store
            .archive(BoxKind::InboxEvents, completed_at)
            .await
            .expect("archive"),
        0
    );
    assert_eq!(
        store
            .archive(
                BoxKind::InboxEvents,
                completed_at + chrono::Duration::nanoseconds(1)
            )
            .await
            .expect("archive"),
        1
    );
}

/// Archive moves COMPLETED rows completed before the cut-off into `<box>_archive`; an id
/// archived twice (received again after its row was archived) is kept twice.
pub async fn archive_moves_old_completed_rows_out_of_the_box<S, F, Fut>(store: S, archived: F)
where
    S: Admin,
    F: Fn(S, BoxKind) -> Fut,
    Fut: Future<Output = Vec<ArchivedRow>>,
{
    let f = fixture(&store).await;
    let past = Utc::now() - chrono::Duration::hours(1);
    let future = Utc::now() + chrono::Duration::hours(1);
    assert_eq!(
        store
            .archive(BoxKind::OutboxEvents, past)
            .await
            .expect("archive"),
        0
    );
    assert!(archived(store.clone(), BoxKind::OutboxEvents)
        .await
        .is_empty());
    assert_eq!(
        store
            .archive(BoxKind::OutboxEvents, future)
            .await
            .expect("archive"),
        1
    );
    let left = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(left.len(), 5);
    assert!(left
        .iter()
        .all(|r| r.message.status != MessageStatus::Completed));
    assert_eq!(
        archived(store.clone(), BoxKind::OutboxEvents).await,
        vec![(f.a_done.id, None, MessageStatus::Completed)]
    );

    assert_eq!(
        store
            .archive(BoxKind::InboxEvents, future)
            .await
            .expect("archive"),
        1
    );
    let inventory = ["inventory".to_owned()];
    let again = store
        .receive(
            MessageKind::Event,
            &[Delivery {
                record: &f.received,
                subscribers: &inventory,
            }],
        )
        .await
        .expect("receive");
    assert_eq!(again.inserted, 1, "the archived row no longer deduplicates");
    assert_eq!(claim_all(&store, BoxKind::InboxEvents).await, 1);
    store
        .resolve(
            BoxKind::InboxEvents,
            "w",
            &[outcome(
                f.received.id,
                Some("inventory"),
                Resolution::Completed,
            )],
        )
        .await
        .expect("resolve");
    assert_eq!(
        store
            .archive(BoxKind::InboxEvents, future)
            .await
            .expect("archive"),
        1
    );
    let inbox_archive = archived(store.clone(), BoxKind::InboxEvents).await;
    let twice = (
        f.received.id,
        Some("inventory".to_owned()),
        MessageStatus::Completed,
    );
    assert_eq!(inbox_archive, vec![twice.clone(), twice]);
    let inbox = rows(&store, BoxKind::InboxEvents).await;
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].message.status, MessageStatus::Failed);
}
