//! Rows that are only waiting are never stale: in a backlog that drains, behind an older
//! live row of their key, under a live lease, beside another subscriber that drains.

use std::time::Duration;

use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Delivery, Inspect, Resolution};

use super::{claim_one, fail_stale, past_the_threshold, resolve, statuses};
use crate::store::{emit, ping};

/// Rows due for longer than the threshold are spared while the box completes rows; once
/// it completed nothing for a whole threshold, they are FAILED with the reason.
pub async fn a_draining_backlog_is_not_failed_until_the_box_stops<S: Inspect>(store: S) {
    let records: Vec<_> = (0..3).map(|n| ping(n, &format!("k{n}"))).collect();
    emit(&store, &records).await;
    past_the_threshold().await;
    // The worker drains: one row completes now, the others wait their turn.
    let first = claim_one(&store, BoxKind::OutboxEvents, Duration::from_secs(30)).await;
    resolve(&store, BoxKind::OutboxEvents, &first, Resolution::Completed).await;
    assert_eq!(
        fail_stale(&store, BoxKind::OutboxEvents).await,
        (0, 0),
        "waiting in a backlog that drains is not stale"
    );
    // The box stops: nothing completes for a threshold.
    past_the_threshold().await;
    assert_eq!(fail_stale(&store, BoxKind::OutboxEvents).await, (2, 0));
    let failed = Some("stale pending".to_owned());
    assert_eq!(
        statuses(&store, BoxKind::OutboxEvents).await,
        vec![
            (records[0].id, None, MessageStatus::Completed, None),
            (records[1].id, None, MessageStatus::Failed, failed.clone()),
            (records[2].id, None, MessageStatus::Failed, failed),
        ]
    );
    assert_eq!(
        fail_stale(&store, BoxKind::OutboxEvents).await,
        (0, 0),
        "FAILED rows stay"
    );
}

/// A row due for long behind an older live row of its key (here one in a long retry
/// backoff) is only waiting: it is not failed, while a stuck head of another key is.
pub async fn a_row_behind_an_older_live_row_of_its_key_is_not_failed<S: Inspect>(store: S) {
    let records = vec![ping(0, "a"), ping(1, "a"), ping(2, "b")];
    emit(&store, &records).await;
    let head = claim_one(&store, BoxKind::OutboxEvents, Duration::from_secs(30)).await;
    assert_eq!(head.record.id, records[0].id);
    let backoff = Resolution::Retry {
        retry_count: 1,
        delay: Duration::from_secs(3_600),
        error: "broker down".into(),
    };
    resolve(&store, BoxKind::OutboxEvents, &head, backoff).await;
    past_the_threshold().await;
    assert_eq!(fail_stale(&store, BoxKind::OutboxEvents).await, (1, 0));
    let seen: Vec<_> = statuses(&store, BoxKind::OutboxEvents)
        .await
        .into_iter()
        .map(|(id, _, status, _)| (id, status))
        .collect();
    assert_eq!(
        seen,
        vec![
            (records[0].id, MessageStatus::Pending),
            (records[1].id, MessageStatus::Pending),
            (records[2].id, MessageStatus::Failed),
        ],
        "only the head of key b, due and nothing ahead of it, is stale"
    );
}

/// A PROCESSING row claimed long ago under a live lease (its holder renews it) is never
/// stale, and it keeps the box alive; one whose lease ran out longer than the threshold
/// ago, in a box where nothing else moves, is FAILED.
pub async fn processing_is_stale_only_when_its_lease_ran_out_long_ago<S: Inspect>(store: S) {
    let records = vec![ping(0, "a"), ping(1, "b")];
    emit(&store, &records).await;
    let held = claim_one(&store, BoxKind::OutboxEvents, Duration::from_secs(3_600)).await;
    let dead = claim_one(&store, BoxKind::OutboxEvents, Duration::ZERO).await;
    assert_eq!(
        (held.record.id, dead.record.id),
        (records[0].id, records[1].id)
    );
    past_the_threshold().await;
    assert_eq!(
        fail_stale(&store, BoxKind::OutboxEvents).await,
        (0, 0),
        "a live lease is never stale, and while one is held the box is alive"
    );
    // The live holder lets its row go (graceful shutdown): nothing moves any more.
    resolve(&store, BoxKind::OutboxEvents, &held, Resolution::Release).await;
    assert_eq!(fail_stale(&store, BoxKind::OutboxEvents).await, (0, 1));
    assert_eq!(
        statuses(&store, BoxKind::OutboxEvents).await,
        vec![
            (records[0].id, None, MessageStatus::Pending, None),
            (
                records[1].id,
                None,
                MessageStatus::Failed,
                Some("stale processing".to_owned())
            ),
        ]
    );
}

/// Inboxes are judged per subscriber: the rows of one that stopped are FAILED, the waiting
/// rows of one that drains are not.
pub async fn an_inbox_subscriber_that_stops_is_failed_while_another_drains<S: Inspect>(store: S) {
    let (first, second) = (ping(0, "a"), ping(1, "b"));
    let (drains, stopped) = (
        vec!["drains".to_owned()],
        vec!["drains".to_owned(), "stopped".to_owned()],
    );
    let deliveries = [
        Delivery {
            record: &first,
            subscribers: &drains,
        },
        Delivery {
            record: &second,
            subscribers: &stopped,
        },
    ];
    store
        .receive(MessageKind::Event, &deliveries)
        .await
        .expect("receive");
    past_the_threshold().await;
    let done = claim_one(&store, BoxKind::InboxEvents, Duration::from_secs(30)).await;
    assert_eq!(
        (done.record.id, done.subscriber.as_deref()),
        (first.id, Some("drains"))
    );
    resolve(&store, BoxKind::InboxEvents, &done, Resolution::Completed).await;
    assert_eq!(fail_stale(&store, BoxKind::InboxEvents).await, (1, 0));
    let mut seen: Vec<_> = statuses(&store, BoxKind::InboxEvents)
        .await
        .into_iter()
        .map(|(id, subscriber, status, _)| (id, subscriber, status))
        .collect();
    seen.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut expected = vec![
        (
            first.id,
            Some("drains".to_owned()),
            MessageStatus::Completed,
        ),
        (second.id, Some("drains".to_owned()), MessageStatus::Pending),
        (second.id, Some("stopped".to_owned()), MessageStatus::Failed),
    ];
    expected.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    assert_eq!(seen, expected);
}
