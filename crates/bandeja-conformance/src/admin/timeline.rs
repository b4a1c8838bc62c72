//! The per-minute timeline in the `Admin` suite: completions and failed attempts counted in
//! the minute they happened, with the completions' lag; archived completions count; a start
//! more than a day back is refused.

use std::time::Duration;

use chrono::{DateTime, DurationRound, Utc};

use bandeja_core::admin::{Admin, MinuteStats};
use bandeja_core::config::{CompletionMode, CompletionModes};
use bandeja_core::error::StoreErrorKind;
use bandeja_core::record::BoxKind;
use bandeja_core::store::Resolution;

use super::{claim_and_resolve, outcome, record, ACME};
use crate::store::emit;

fn minute(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(chrono::TimeDelta::minutes(1))
        .expect("minute")
}

/// The entries of `box_kind`.
fn of(stats: &[MinuteStats], box_kind: BoxKind) -> Vec<MinuteStats> {
    stats
        .iter()
        .filter(|s| s.box_kind == box_kind)
        .cloned()
        .collect()
}

/// Two completions and one failed attempt land in the minute they were written, with the
/// completions' lag (`completed_at − created_at`, longest and average); other boxes have
/// nothing; a start after them finds nothing.
pub async fn the_timeline_counts_handled_and_failed_in_their_minute<S: Admin>(store: S) {
    let before = minute(Utc::now());
    let (a, b, c) = (record(1, ACME), record(2, ACME), record(3, ACME));
    emit(&store, &[a.clone(), b.clone(), c.clone()]).await;
    claim_and_resolve(
        &store,
        BoxKind::OutboxEvents,
        &[
            outcome(a.id, None, Resolution::Completed),
            outcome(b.id, None, Resolution::Completed),
            outcome(
                c.id,
                None,
                Resolution::Retry {
                    retry_count: 1,
                    delay: Duration::from_secs(3600),
                    error: "later".into(),
                },
            ),
        ],
    )
    .await;
    let after = minute(Utc::now());
    let stats = store
        .timeline(Utc::now() - chrono::Duration::minutes(10))
        .await
        .expect("timeline");
    let outbox = of(&stats, BoxKind::OutboxEvents);
    assert!(!outbox.is_empty(), "{stats:?}");
    assert!(
        outbox
            .iter()
            .all(|s| s.minute >= before && s.minute <= after),
        "{outbox:?}"
    );
    assert_eq!(outbox.iter().map(|s| s.handled).sum::<u64>(), 2);
    assert_eq!(outbox.iter().map(|s| s.failed).sum::<u64>(), 1);
    assert_eq!(
        stats.len(),
        outbox.len(),
        "no other box did anything: {stats:?}"
    );

    let mut lags = Vec::new();
    for id in [a.id, b.id] {
        let view = store.show(id).await.expect("show").remove(0);
        let completed = view.completed_at.expect("completed");
        let lag = (completed - view.created_at)
            .num_microseconds()
            .expect("lag");
        lags.push(lag as f64 / 1e6);
    }
    // Both completions were written by one statement, with one `completed_at`: one minute
    // holds them both, with their lags exactly.
    let handled: Vec<_> = outbox.iter().filter(|s| s.handled > 0).collect();
    let [one] = handled.as_slice() else {
        panic!("both completions in one minute: {outbox:?}");
    };
    assert_eq!(one.handled, 2, "{one:?}");
    let longest = lags.iter().copied().fold(0.0, f64::max);
    let average = lags.iter().sum::<f64>() / 2.0;
    assert!(
        (one.lag_max_seconds - longest).abs() < 0.002,
        "{one:?} {lags:?}"
    );
    assert!(
        (one.lag_avg_seconds - average).abs() < 0.002,
        "{one:?} {lags:?}"
    );
    assert!(outbox
        .iter()
        .all(|s| s.lag_avg_seconds <= s.lag_max_seconds && s.lag_max_seconds >= 0.0));

    let later = store
        .timeline(Utc::now() + chrono::Duration::minutes(2))
        .await
        .expect("timeline");
    assert!(later.is_empty(), "{later:?}");
}

/// In `archive` completion mode the completed rows leave the box at once: the timeline
/// counts them from the archive.
pub async fn the_timeline_counts_archived_completions<S: Admin>(store: S) {
    let modes = CompletionModes::default().with(BoxKind::OutboxEvents, CompletionMode::Archive);
    let store = store.with_completion(modes).expect("archive mode");
    let message = record(1, ACME);
    emit(&store, std::slice::from_ref(&message)).await;
    claim_and_resolve(
        &store,
        BoxKind::OutboxEvents,
        &[outcome(message.id, None, Resolution::Completed)],
    )
    .await;
    let stats = store
        .timeline(Utc::now() - chrono::Duration::minutes(5))
        .await
        .expect("timeline");
    let outbox = of(&stats, BoxKind::OutboxEvents);
    assert_eq!(
        outbox.iter().map(|s| s.handled).sum::<u64>(),
        1,
        "{stats:?}"
    );
}

/// A start more than 24 hours back is refused with a message that says the limit.
pub async fn the_timeline_refuses_a_start_more_than_a_day_back<S: Admin>(store: S) {
    let err = store
        .timeline(Utc::now() - chrono::Duration::hours(25))
        .await
        .expect_err("too far back");
    assert_eq!(err.kind(), StoreErrorKind::Permanent);
    assert!(err.to_string().contains("24 hours"), "{err}");
    let day = store
        .timeline(Utc::now() - chrono::Duration::hours(24))
        .await
        .expect("a day back is fine");
    assert!(day.is_empty(), "{day:?}");
}
