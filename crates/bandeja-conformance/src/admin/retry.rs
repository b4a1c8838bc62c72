//! Retry and replay in the `Admin` suite: FAILED rows resubmitted, COMPLETED inbox rows
//! replayed, filters they cannot serve refused.

use chrono::Utc;

use bandeja_core::admin::{Admin, MessageFilter};
use bandeja_core::error::StoreErrorKind;
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;

use super::{fixture, row, snapshot, GLOBEX, HOUR};
use crate::store::request;

/// Retry: FAILED → PENDING due now, retry count 0, no lease, resubmission recorded, the
/// box's worker woken; rows in other statuses untouched.
pub async fn retry_resubmits_failed_rows_only_and_wakes_the_box<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let before = snapshot(&store).await;
    let woken = store.wakers().subscribe(BoxKind::OutboxEvents);
    let globex = MessageFilter {
        tenant: Some(GLOBEX.into()),
        ..Default::default()
    };
    assert_eq!(store.retry(&globex).await.expect("retry"), 1);
    assert!(
        woken.has_changed().expect("waker alive"),
        "the box was woken"
    );
    let shown = store.show(f.g_failed.id).await.expect("show");
    let retried = &shown[0];
    assert_eq!(retried.message.status, MessageStatus::Pending);
    assert_eq!(retried.message.retry_count, 0);
    assert_eq!(
        retried.message.last_error.as_deref(),
        Some("no route"),
        "kept"
    );
    assert_eq!(
        (retried.locked_by.as_deref(), retried.locked_until),
        (None, None)
    );
    assert!(retried.next_attempt_at.is_some_and(|t| t <= Utc::now()));
    assert_eq!(retried.resubmitted_count, 1);
    assert!(retried.resubmitted_at.is_some());
    let after = snapshot(&store).await;
    let changed: Vec<_> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b != a)
        .map(|(_, a)| a.clone())
        .collect();
    assert_eq!(
        changed,
        vec![(
            BoxKind::OutboxEvents,
            f.g_failed.id,
            None,
            MessageStatus::Pending
        )]
    );
    let processing = row(&store, BoxKind::OutboxEvents, f.a_processing.id, None).await;
    assert_eq!(
        processing.locked_by.as_deref(),
        Some("w"),
        "a held row is left alone"
    );

    assert_eq!(
        store.retry(&MessageFilter::default()).await.expect("retry"),
        2
    );
    let counters = store.counters(HOUR, false).await.expect("counters");
    assert!(counters.iter().all(|c| c.failed == 0));
    assert_eq!(counters[0].processing, 1);
    let done = row(&store, BoxKind::OutboxEvents, f.a_done.id, None).await;
    assert_eq!(done.message.status, MessageStatus::Completed);
    let notification = store.show(f.received.id).await.expect("show");
    assert_eq!(
        notification[1].message.subscriber.as_deref(),
        Some("notification")
    );
    assert_eq!(notification[1].message.status, MessageStatus::Pending);
    assert_eq!(notification[0].message.status, MessageStatus::Completed);
    assert_eq!(
        store.retry(&MessageFilter::default()).await.expect("retry"),
        0
    );

    let claimed = store
        .claim(
            BoxKind::OutboxEvents,
            &bandeja_core::store::ClaimRequest {
                ordered: false,
                ..request("w2", 100)
            },
        )
        .await
        .expect("claim");
    assert!(
        claimed.iter().any(|m| m.record.id == f.g_failed.id),
        "a worker takes the resubmitted row at once"
    );
}

/// Retry refuses a filter for another status; replay one for another status or an outbox.
pub async fn retry_and_replay_reject_filters_they_cannot_serve<S: Admin>(store: S) {
    fixture(&store).await;
    let before = snapshot(&store).await;
    let pending = MessageFilter {
        status: Some(MessageStatus::Pending),
        ..Default::default()
    };
    let err = store
        .retry(&pending)
        .await
        .expect_err("retry of PENDING rows");
    assert_eq!(err.kind(), StoreErrorKind::Permanent, "{err}");
    let err = store
        .replay(&pending)
        .await
        .expect_err("replay of PENDING rows");
    assert_eq!(err.kind(), StoreErrorKind::Permanent, "{err}");
    let outbox = MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        ..Default::default()
    };
    let err = store
        .replay(&outbox)
        .await
        .expect_err("replay of an outbox");
    assert!(err.to_string().contains("inboxes"), "{err}");
    assert_eq!(snapshot(&store).await, before, "nothing changed");
}

/// Replay: COMPLETED inbox rows → PENDING with the resubmission recorded; outbox rows and
/// rows in other statuses untouched.
pub async fn replay_resubmits_completed_inbox_rows_only<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let before = snapshot(&store).await;
    let woken = store.wakers().subscribe(BoxKind::InboxEvents);
    let inventory = MessageFilter {
        subscriber: Some("inventory".into()),
        ..Default::default()
    };
    assert_eq!(store.replay(&inventory).await.expect("replay"), 1);
    assert!(woken.has_changed().expect("waker alive"));
    let shown = store.show(f.received.id).await.expect("show");
    let replayed = &shown[0];
    assert_eq!(replayed.message.subscriber.as_deref(), Some("inventory"));
    assert_eq!(replayed.message.status, MessageStatus::Pending);
    assert_eq!(replayed.completed_at, None);
    assert_eq!(replayed.message.retry_count, 0);
    assert_eq!(replayed.resubmitted_count, 1);
    assert!(replayed.resubmitted_at.is_some());
    assert!(replayed.next_attempt_at.is_some_and(|t| t <= Utc::now()));
    let after = snapshot(&store).await;
    let changed = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    assert_eq!(changed, 1);
    assert_eq!(
        row(&store, BoxKind::OutboxEvents, f.a_done.id, None)
            .await
            .message
            .status,
        MessageStatus::Completed,
        "outbox rows are never replayed"
    );
    assert_eq!(
        store
            .replay(&MessageFilter::default())
            .await
            .expect("replay"),
        0
    );
    let since_tomorrow = MessageFilter {
        since: Some(Utc::now() + chrono::Duration::days(1)),
        ..Default::default()
    };
    assert_eq!(store.replay(&since_tomorrow).await.expect("replay"), 0);
}
