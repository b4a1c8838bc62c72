//! Resolution of a claimed row: a retry goes back to PENDING with its backoff, a failure is
//! terminal, completion inside the handler's transaction commits and rolls back with it.

use std::time::Duration;

use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Delivery, Inspect, Resolution};

use super::{emit, ids, outcome, ping, request, rows};

/// A retry goes back to PENDING with the new count, the error and a due time in the future.
pub async fn retry_goes_back_to_pending_with_backoff<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a"), ping(2, "b")]).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    let later = Resolution::Retry {
        retry_count: 1,
        delay: Duration::from_secs(3600),
        error: "broker down".into(),
    };
    let now = Resolution::Retry {
        retry_count: 1,
        delay: Duration::ZERO,
        error: "blip".into(),
    };
    store
        .resolve(
            BoxKind::OutboxEvents,
            "w",
            &[outcome(&claimed[0], later), outcome(&claimed[1], now)],
        )
        .await
        .expect("resolve");
    let rows = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(rows[0].message.status, MessageStatus::Pending);
    assert_eq!(rows[0].message.retry_count, 1);
    assert_eq!(rows[0].message.last_error.as_deref(), Some("broker down"));
    assert!(rows[0]
        .next_attempt_at
        .is_some_and(|t| t > chrono::Utc::now() + chrono::Duration::minutes(59)));
    let again = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    assert_eq!(
        ids(&again),
        vec![claimed[1].record.id],
        "only the row whose backoff is over is due"
    );
    assert_eq!(again[0].retry_count, 1);
}

/// FAILED is terminal and keeps the error.
pub async fn failure_is_terminal_with_the_error<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a")]).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    let failed = Resolution::Failed {
        retry_count: 3,
        error: "no route".into(),
    };
    store
        .resolve(BoxKind::OutboxEvents, "w", &[outcome(&claimed[0], failed)])
        .await
        .expect("resolve");
    let row = &rows(&store, BoxKind::OutboxEvents).await[0];
    assert_eq!(row.message.status, MessageStatus::Failed);
    assert_eq!(row.message.retry_count, 3);
    assert_eq!(row.message.last_error.as_deref(), Some("no route"));
    assert!(store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim")
        .is_empty());
}

/// `complete_in` marks the row inside the caller's transaction, only for the holder.
pub async fn complete_inside_the_handler_transaction<S: Inspect>(store: S) {
    let record = ping(1, "a");
    let subscribers = vec!["s".to_owned()];
    store
        .receive(
            MessageKind::Event,
            &[Delivery {
                record: &record,
                subscribers: &subscribers,
            }],
        )
        .await
        .expect("receive");
    let claimed = store
        .claim(BoxKind::InboxEvents, &request("w", 10))
        .await
        .expect("claim");
    let mut tx = store.begin().await.expect("begin");
    let intruder = store
        .complete_in(&mut tx, BoxKind::InboxEvents, record.id, Some("s"), "other")
        .await
        .expect("complete");
    assert!(!intruder);
    assert!(store
        .complete_in(&mut tx, BoxKind::InboxEvents, record.id, Some("s"), "w")
        .await
        .expect("complete"));
    drop(tx);
    assert_eq!(
        rows(&store, BoxKind::InboxEvents).await[0].message.status,
        MessageStatus::Processing,
        "rolled back"
    );
    let mut tx = store.begin().await.expect("begin");
    assert!(store
        .complete_in(
            &mut tx,
            BoxKind::InboxEvents,
            claimed[0].record.id,
            Some("s"),
            "w"
        )
        .await
        .expect("complete"));
    store.commit(tx).await.expect("commit");
    assert_eq!(
        rows(&store, BoxKind::InboxEvents).await[0].message.status,
        MessageStatus::Completed
    );
}
