//! Per-key order in the store's claims: only the oldest live message of a key is claimable.

use std::time::Duration;

use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::store::{ClaimRequest, Delivery, Inspect, Resolution};

use super::{emit, ids, outcome, ping, request};

/// With ordering on, only the oldest live message of a key is claimable; other keys are not held back.
pub async fn per_key_order_holds_back_later_messages_of_the_key_only<S: Inspect>(store: S) {
    let records = [ping(1, "k1"), ping(2, "k1"), ping(3, "k2")];
    let subscribers = vec!["s".to_owned()];
    let deliveries: Vec<_> = records
        .iter()
        .map(|record| Delivery {
            record,
            subscribers: &subscribers,
        })
        .collect();
    store
        .receive(MessageKind::Event, &deliveries)
        .await
        .expect("receive");
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
