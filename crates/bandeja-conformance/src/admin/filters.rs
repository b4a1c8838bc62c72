//! Filters in the `Admin` suite: `count` matches what `list` returns for every filter, and
//! SQL metacharacters in a filter are data.

use chrono::Utc;

use bandeja_core::admin::{Admin, MessageFilter, Page};
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;

use super::{fixture, ids, list, record, row, snapshot, GLOBEX, HOUR, PONG};
use crate::store::emit;

/// `count` agrees with `list` for every filter field (`completed_before` included), over
/// one box or all four, and counts nothing for values that match nothing.
pub async fn count_matches_what_list_returns_for_every_filter<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let now = Utc::now();
    let hour = chrono::Duration::hours(1);
    let done = row(&store, BoxKind::OutboxEvents, f.a_done.id, None).await;
    let done_at = done.completed_at.expect("completed_at");
    let created = done.created_at;
    let ns = chrono::Duration::nanoseconds(1);
    // `since` / `until` compare the recorded `created_at`, whatever its precision.
    let created_window = |since, until| MessageFilter {
        id: Some(f.a_done.id),
        since,
        until,
        ..Default::default()
    };
    let filters = [
        (created_window(Some(created), None), 1),
        (created_window(Some(created + ns), None), 0),
        (created_window(None, Some(created)), 0),
        (created_window(None, Some(created + ns)), 1),
        (MessageFilter::default(), 8),
        (
            MessageFilter {
                box_kind: Some(BoxKind::InboxEvents),
                ..Default::default()
            },
            2,
        ),
        (
            MessageFilter {
                status: Some(MessageStatus::Failed),
                ..Default::default()
            },
            3,
        ),
        (
            MessageFilter {
                box_kind: Some(BoxKind::OutboxEvents),
                status: Some(MessageStatus::Pending),
                ..Default::default()
            },
            2,
        ),
        (
            MessageFilter {
                tenant: Some(GLOBEX.into()),
                ..Default::default()
            },
            2,
        ),
        (
            MessageFilter {
                message_type: Some(PONG.into()),
                ..Default::default()
            },
            1,
        ),
        (
            MessageFilter {
                subscriber: Some("inventory".into()),
                ..Default::default()
            },
            1,
        ),
        (
            MessageFilter {
                id: Some(f.received.id),
                ..Default::default()
            },
            2,
        ),
        (
            MessageFilter {
                since: Some(now + hour),
                ..Default::default()
            },
            0,
        ),
        (
            MessageFilter {
                since: Some(now - hour),
                until: Some(now + hour),
                ..Default::default()
            },
            8,
        ),
        (
            MessageFilter {
                completed_before: Some(now + hour),
                ..Default::default()
            },
            2,
        ),
        (
            MessageFilter {
                box_kind: Some(BoxKind::OutboxEvents),
                status: Some(MessageStatus::Completed),
                completed_before: Some(done_at),
                ..Default::default()
            },
            0,
        ),
        (
            MessageFilter {
                box_kind: Some(BoxKind::OutboxEvents),
                status: Some(MessageStatus::Completed),
                completed_before: Some(done_at + ns),
                ..Default::default()
            },
            1,
        ),
        (
            MessageFilter {
                tenant: Some("' OR 1=1 --".into()),
                ..Default::default()
            },
            0,
        ),
    ];
    for (filter, expected) in &filters {
        let counted = store.count(filter).await.expect("count");
        assert_eq!(counted, *expected, "count {filter:?}");
        let listed = store.list(filter, Page::default()).await.expect("list");
        assert_eq!(listed.len() as u64, counted, "list and count {filter:?}");
    }
    let outbox_and_subscriber = MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        subscriber: Some("inventory".into()),
        ..Default::default()
    };
    assert_eq!(store.count(&outbox_and_subscriber).await.expect("count"), 0);
}

/// Filter values full of SQL metacharacters are plain values: they match nothing, change
/// nothing, and a tenant whose name holds a quote is found exactly.
pub async fn sql_metacharacters_in_filters_match_nothing_and_break_nothing<S: Admin>(store: S) {
    fixture(&store).await;
    let quoted = record(50, "o'brien");
    emit(&store, std::slice::from_ref(&quoted)).await;
    let before = snapshot(&store).await;
    let nasty = [
        "' OR 1=1 --",
        "x'; DROP TABLE outbox_events; --",
        "\" OR \"\"=\"",
        "%",
        "_",
        "\\",
    ];
    for value in nasty {
        let filters = [
            MessageFilter {
                tenant: Some(value.into()),
                ..Default::default()
            },
            MessageFilter {
                message_type: Some(value.into()),
                ..Default::default()
            },
            MessageFilter {
                subscriber: Some(value.into()),
                ..Default::default()
            },
        ];
        for filter in &filters {
            assert!(list(&store, filter.clone()).await.is_empty(), "{filter:?}");
            assert_eq!(store.retry(filter).await.expect("retry"), 0, "{filter:?}");
            assert_eq!(store.replay(filter).await.expect("replay"), 0, "{filter:?}");
        }
    }
    assert_eq!(
        snapshot(&store).await,
        before,
        "nothing changed, nothing dropped"
    );
    let found = list(
        &store,
        MessageFilter {
            tenant: Some("o'brien".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&found), vec![quoted.id]);
    let counters = store.counters(HOUR, false).await.expect("counters");
    assert_eq!(counters[0].pending, 3);
}
