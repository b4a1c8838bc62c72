//! Discard and the archive in the `Admin` suite: FAILED rows move into the archive with
//! who and why, nothing else moves, `show` and archived listings find them, and
//! `purge_archive` prunes only what was archived before its horizon, exactly what a count
//! with `archived_before` finds.

use chrono::{DateTime, Utc};

use bandeja_core::admin::{Admin, Discard, MessageFilter, Page};
use bandeja_core::error::StoreErrorKind;
use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Delivery;

use super::{fixture, ids, list, snapshot, ArchivedRow, ACME};
use crate::store::rows;

fn operator(reason: &str) -> Discard {
    Discard {
        by: "alice".into(),
        reason: reason.into(),
    }
}

/// Waits (without sleeping) until the clock has passed `t` by a few milliseconds, so rows
/// written from now on are stamped after `t` at any store's precision.
async fn clock_past(t: DateTime<Utc>) {
    while Utc::now() <= t + chrono::Duration::milliseconds(5) {
        tokio::task::yield_now().await;
    }
}

/// A discarded FAILED row leaves its box; `show` and an archived listing find it with who
/// discarded it and why, its status and last error as they were.
pub async fn discard_moves_failed_rows_into_the_archive_with_who_and_why<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let acme_outbox = MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        tenant: Some(ACME.into()),
        ..Default::default()
    };
    let moved = store
        .discard(&acme_outbox, &operator("poison: bad payload"))
        .await
        .expect("discard");
    assert_eq!(moved, 1, "acme has one FAILED outbox row");
    let left = ids(&list(&store, acme_outbox.clone()).await);
    assert!(!left.contains(&f.a_failed.id), "the row left the box");
    assert!(left.contains(&f.a_pending.id) && left.contains(&f.a_done.id));

    let shown = store.show(f.a_failed.id).await.expect("show");
    assert_eq!(shown.len(), 1, "{shown:?}");
    let archived = &shown[0];
    assert!(archived.archived_at.is_some());
    assert_eq!(archived.discarded_by.as_deref(), Some("alice"));
    assert_eq!(
        archived.discard_reason.as_deref(),
        Some("poison: bad payload")
    );
    assert_eq!(archived.message.status, MessageStatus::Failed);
    assert_eq!(archived.message.last_error.as_deref(), Some("boom"));
    assert_eq!(archived.message.retry_count, 3);
    assert_eq!(archived.message.record.payload, f.a_failed.payload);

    let in_archive = MessageFilter {
        archived: true,
        status: Some(MessageStatus::Failed),
        ..Default::default()
    };
    let found = list(&store, in_archive.clone()).await;
    assert_eq!(ids(&found), vec![f.a_failed.id]);
    assert_eq!(found[0].discarded_by.as_deref(), Some("alice"));
    assert_eq!(store.count(&in_archive).await.expect("count"), 1);
    let live = list(&store, MessageFilter::default()).await;
    assert!(
        live.iter().all(|v| v.archived_at.is_none()),
        "live rows are not archived"
    );
}

/// Only FAILED rows are ever discarded: a filter without a status takes the FAILED rows
/// of every box and leaves every other row as it was; a filter asking for another status,
/// or for the archive, is refused and changes nothing (as retry and replay refuse the
/// archive).
pub async fn discard_takes_failed_rows_only<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let before = snapshot(&store).await;
    for refused in [
        MessageFilter {
            status: Some(MessageStatus::Pending),
            ..Default::default()
        },
        MessageFilter {
            archived: true,
            ..Default::default()
        },
    ] {
        let err = store
            .discard(&refused, &operator("no"))
            .await
            .expect_err("refused");
        assert_eq!(err.kind(), StoreErrorKind::Permanent);
    }
    let archived = MessageFilter {
        archived: true,
        ..Default::default()
    };
    assert!(
        store.retry(&archived).await.is_err(),
        "retry reads the boxes"
    );
    assert!(
        store.replay(&archived).await.is_err(),
        "replay reads the boxes"
    );
    let resend = bandeja_core::admin::OutboxReplay::everything(archived);
    assert!(store.replay_outbox(&resend).await.is_err());
    assert_eq!(snapshot(&store).await, before, "nothing changed");

    let moved = store
        .discard(&MessageFilter::default(), &operator("clean up"))
        .await
        .expect("discard");
    assert_eq!(moved, 3, "a_failed, g_failed and the notification row");
    let after = snapshot(&store).await;
    let kept: Vec<_> = before
        .iter()
        .filter(|(_, _, _, status)| *status != MessageStatus::Failed)
        .cloned()
        .collect();
    assert_eq!(after, kept, "every row that was not FAILED is where it was");
    let pending = rows(&store, BoxKind::OutboxEvents).await;
    assert!(pending.iter().any(
        |r| r.message.record.id == f.a_pending.id && r.message.status == MessageStatus::Pending
    ));
    assert_eq!(
        store
            .discard(&MessageFilter::default(), &operator("again"))
            .await
            .expect("discard"),
        0,
        "nothing FAILED is left"
    );
}

/// `show` lists a message's live rows before its archived ones; a redelivery of a
/// discarded inbox message (update completion mode) makes a new row, as after an archive.
pub async fn show_lists_live_rows_then_archived_ones<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let notification = MessageFilter {
        subscriber: Some("notification".into()),
        ..Default::default()
    };
    assert_eq!(
        store
            .discard(&notification, &operator("handler retired"))
            .await
            .expect("discard"),
        1
    );
    let shown = store.show(f.received.id).await.expect("show");
    let seen: Vec<_> = shown
        .iter()
        .map(|v| (v.message.subscriber.clone(), v.archived_at.is_some()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (Some("inventory".to_owned()), false),
            (Some("notification".to_owned()), true)
        ]
    );
    let subscribers = ["notification".to_owned()];
    let report = store
        .receive(
            MessageKind::Event,
            &[Delivery {
                record: &f.received,
                subscribers: &subscribers,
            }],
        )
        .await
        .expect("receive again");
    assert_eq!(report.inserted, 1, "the discarded row no longer absorbs it");
    let shown = store.show(f.received.id).await.expect("show");
    let seen: Vec<_> = shown
        .iter()
        .map(|v| {
            (
                v.message.subscriber.clone(),
                v.message.status,
                v.archived_at.is_some(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                Some("inventory".to_owned()),
                MessageStatus::Completed,
                false
            ),
            (
                Some("notification".to_owned()),
                MessageStatus::Pending,
                false
            ),
            (Some("notification".to_owned()), MessageStatus::Failed, true),
        ]
    );
}

/// An archived listing pages like a live one and reads archived completions too (status
/// COMPLETED), with no discard recorded on them.
pub async fn archived_listing_holds_completions_and_discards<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let future = Utc::now() + chrono::Duration::hours(1);
    assert_eq!(
        store
            .archive(BoxKind::OutboxEvents, future)
            .await
            .expect("archive"),
        1
    );
    store
        .discard(&MessageFilter::default(), &operator("poison"))
        .await
        .expect("discard");
    let archived = MessageFilter {
        archived: true,
        box_kind: Some(BoxKind::OutboxEvents),
        ..Default::default()
    };
    assert_eq!(store.count(&archived).await.expect("count"), 3);
    let completed = list(
        &store,
        MessageFilter {
            status: Some(MessageStatus::Completed),
            ..archived.clone()
        },
    )
    .await;
    assert_eq!(ids(&completed), vec![f.a_done.id]);
    assert_eq!(completed[0].discarded_by, None);
    assert!(completed[0].archived_at.is_some());
    let first = store
        .list(
            &archived,
            Page {
                limit: 2,
                ..Page::default()
            },
        )
        .await
        .expect("page");
    assert_eq!(first.len(), 2);
    let rest = store
        .list(
            &archived,
            Page {
                limit: 2,
                before_seq: first.last().map(|v| v.message.seq),
                after_seq: None,
            },
        )
        .await
        .expect("next page");
    let mut all = ids(&first);
    all.extend(ids(&rest));
    all.sort();
    let mut expected = vec![f.a_done.id, f.a_failed.id, f.g_failed.id];
    expected.sort();
    assert_eq!(all, expected, "every archived row, once");
}

/// `purge_archive` deletes the archived rows archived before its horizon (completions and
/// discards alike) and keeps the later ones; the boxes are untouched.
pub async fn purge_archive_deletes_only_rows_archived_before_the_horizon<S, R, Fut>(
    store: S,
    archived: R,
) where
    S: Admin + Clone,
    R: Fn(S, BoxKind) -> Fut,
    Fut: std::future::Future<Output = Vec<ArchivedRow>>,
{
    let f = fixture(&store).await;
    let future = Utc::now() + chrono::Duration::hours(1);
    store
        .archive(BoxKind::OutboxEvents, future)
        .await
        .expect("archive");
    let acme = MessageFilter {
        tenant: Some(ACME.into()),
        ..Default::default()
    };
    store
        .discard(&acme, &operator("first"))
        .await
        .expect("discard");
    let horizon = Utc::now();
    clock_past(horizon).await;
    store
        .discard(&MessageFilter::default(), &operator("later"))
        .await
        .expect("discard");
    let before = snapshot(&store).await;
    let past = Utc::now() - chrono::Duration::hours(1);
    assert_eq!(
        store
            .purge_archive(BoxKind::OutboxEvents, past)
            .await
            .expect("purge nothing"),
        0
    );
    assert_eq!(
        store
            .purge_archive(BoxKind::OutboxEvents, horizon)
            .await
            .expect("purge the archive"),
        2,
        "a_done (archived) and a_failed (discarded) were archived before the horizon"
    );
    let left: Vec<_> = archived(store.clone(), BoxKind::OutboxEvents)
        .await
        .into_iter()
        .map(|(id, _, status)| (id, status))
        .collect();
    assert_eq!(left, vec![(f.g_failed.id, MessageStatus::Failed)]);
    assert!(store.show(f.a_failed.id).await.expect("show").is_empty());
    assert_eq!(
        archived(store.clone(), BoxKind::InboxEvents).await.len(),
        1,
        "other archives untouched"
    );
    assert_eq!(snapshot(&store).await, before, "the boxes untouched");
}

/// The archived rows of `box_kind` archived before `before`, as the CLI counts them before
/// `purge --archive` (and as a listing finds them, page by page).
async fn archived_before<S: Admin>(store: &S, box_kind: BoxKind, before: DateTime<Utc>) -> u64 {
    let filter = MessageFilter {
        archived: true,
        box_kind: Some(box_kind),
        archived_before: Some(before),
        ..Default::default()
    };
    let n = store.count(&filter).await.expect("count");
    let listed = list(store, filter).await;
    assert_eq!(
        u64::try_from(listed.len()).ok(),
        Some(n),
        "the listing agrees with the count"
    );
    assert!(listed
        .iter()
        .all(|v| v.archived_at.is_some_and(|at| at < before)));
    n
}

/// A count with `archived_before` is exactly what `purge_archive` at that horizon deletes,
/// at the store's precision: a row archived at the horizon itself is neither counted nor
/// deleted, one archived a nanosecond before it is both; rows archived after it are never
/// counted. Without `archived`, `archived_before` is refused (by a listing, a count and
/// every operation that changes rows) rather than ignored.
pub async fn an_archived_before_count_is_what_purge_archive_deletes<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let future = Utc::now() + chrono::Duration::hours(1);
    for box_kind in [BoxKind::OutboxEvents, BoxKind::InboxEvents] {
        store.archive(box_kind, future).await.expect("archive");
    }
    let archived_done = store.show(f.a_done.id).await.expect("show")[0]
        .archived_at
        .expect("a_done is archived");
    clock_past(Utc::now()).await;
    let acme = MessageFilter {
        tenant: Some(ACME.into()),
        ..Default::default()
    };
    store
        .discard(&acme, &operator("first"))
        .await
        .expect("discard");
    let horizon = Utc::now();
    clock_past(horizon).await;
    store
        .discard(&MessageFilter::default(), &operator("later"))
        .await
        .expect("discard");

    let not_archived = MessageFilter {
        archived_before: Some(future),
        ..Default::default()
    };
    let before = snapshot(&store).await;
    let refused = [
        store.count(&not_archived).await.map(drop),
        store.list(&not_archived, Page::default()).await.map(drop),
        store.retry(&not_archived).await.map(drop),
        store.replay(&not_archived).await.map(drop),
        store
            .discard(&not_archived, &operator("no"))
            .await
            .map(drop),
        store
            .replay_outbox(&bandeja_core::admin::OutboxReplay::everything(
                not_archived.clone(),
            ))
            .await
            .map(drop),
    ];
    for result in refused {
        let err = result.expect_err("archived_before without the archive is refused");
        assert_eq!(err.kind(), StoreErrorKind::Permanent, "{err}");
    }
    assert_eq!(snapshot(&store).await, before, "nothing changed");
    let all = MessageFilter {
        archived: true,
        archived_before: Some(future),
        ..Default::default()
    };
    assert_eq!(
        store.count(&all).await.expect("count"),
        5,
        "every archived row"
    );

    // Ascending horizons; at each, per box, the count is what the purge then deletes.
    let past = Utc::now() - chrono::Duration::hours(1);
    let just_after_done = archived_done + chrono::Duration::nanoseconds(1);
    let mut outbox = Vec::new();
    let mut inbox = 0;
    for at in [past, archived_done, just_after_done, horizon, future] {
        for box_kind in [BoxKind::OutboxEvents, BoxKind::InboxEvents] {
            let counted = archived_before(&store, box_kind, at).await;
            let purged = store.purge_archive(box_kind, at).await.expect("purge");
            assert_eq!(purged, counted, "{box_kind} before {at}");
            assert_eq!(archived_before(&store, box_kind, at).await, 0);
            match box_kind {
                BoxKind::OutboxEvents => outbox.push(purged),
                _ => inbox += purged,
            }
        }
    }
    assert_eq!(
        outbox,
        vec![0, 0, 1, 1, 1],
        "a_done only from a nanosecond after its archived_at, a_failed before the horizon, \
         g_failed after it"
    );
    assert_eq!(inbox, 2, "both inbox rows, each counted once");
    assert_eq!(snapshot(&store).await, before, "the boxes untouched");
}
