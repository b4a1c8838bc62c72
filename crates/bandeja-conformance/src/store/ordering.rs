//! Per-key order in the store's claims: only the oldest live message of a key is claimable.

use std::time::Duration;

use bandeja_core::record::BoxKind;
use bandeja_core::store::{ClaimRequest, Inspect, Resolution};

use super::{emit, ids, outcome, ping, request};
use crate::fixtures::receive_events;

/// With ordering on, only the oldest live message of a key is claimable; other keys are not held back.
pub async fn per_key_order_holds_back_later_messages_of_the_key_only<S: Inspect>(store: S) {
    let records = [ping(1, "k1"), ping(2, "k1"), ping(3, "k2")];
    let subscribers = vec!["s".to_owned()];
    receive_events(&store, records.iter(), &subscribers).await;
    let first = store
        .claim(BoxKind::InboxEvents, &request("w", 10))
        .await
        .expect("claim");
    assert_eq!(ids(&first), vec![records[0].id, records[2].id]);
    assert!(store
        .claim(BoxKind::InboxEvents, &request("w", 10))
        .await
        .expect("claim")
        .is_empty());
    let retry = Resolution::Retry {
        retry_count: 1,
        delay: Duration::ZERO,
        error: "x".into(),
    };
    store
        .resolve(BoxKind::InboxEvents, "w", &[outcome(&first[0], retry)])
        .await
        .expect("resolve");
    let again = store
        .claim(BoxKind::InboxEvents, &request("w", 10))
        .await
        .expect("claim");
    assert_eq!(
        ids(&again),
        vec![records[0].id],
        "the failed head is retried before the rest of its key"
    );
    store
        .resolve(
            BoxKind::InboxEvents,
            "w",
            &[outcome(&again[0], Resolution::Completed)],
        )
        .await
        .expect("resolve");
    let next = store
        .claim(BoxKind::InboxEvents, &request("w", 10))
        .await
        .expect("claim");
    assert_eq!(ids(&next), vec![records[1].id]);
    let unordered = ClaimRequest {
        ordered: false,
        ..request("w", 10)
    };
    emit(&store, &[ping(4, "k3"), ping(5, "k3")]).await;
    assert_eq!(
        store
            .claim(BoxKind::OutboxEvents, &unordered)
            .await
            .expect("claim")
            .len(),
        2
    );
}

/// A key whose rows come only after thousands of rows of a key whose head is held is
/// still claimed: a claim that bounds its walk past rows it cannot take (PostgreSQL's
/// window of 4,096 candidates for these limits) looks further on when it comes back short,
/// one window deeper each second until it finds rows.
pub async fn a_key_behind_thousands_of_held_back_rows_of_another_is_claimed<S: Inspect>(store: S) {
    // More than two windows of the burst: found by the second look, a second after the first.
    let burst = 10_000;
    let mut records: Vec<_> = (0..burst).map(|n| ping(n, "burst")).collect();
    let others = [ping(burst, "a"), ping(burst + 1, "b"), ping(burst + 2, "a")];
    records.extend(others.iter().cloned());
    let subscribers = vec!["s".to_owned()];
    for chunk in records.chunks(1_000) {
        receive_events(&store, chunk.iter(), &subscribers).await;
    }
    let head = store
        .claim(BoxKind::InboxEvents, &request("w", 1))
        .await
        .expect("claim");
    assert_eq!(ids(&head), vec![records[0].id], "the burst's head, held");
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let behind = loop {
        let claimed = store
            .claim(BoxKind::InboxEvents, &request("w", 10))
            .await
            .expect("claim");
        if !claimed.is_empty() || std::time::Instant::now() >= deadline {
            break claimed;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(
        ids(&behind),
        vec![others[0].id, others[1].id],
        "the heads of the keys behind the burst, none of the burst's held-back rows"
    );
}
