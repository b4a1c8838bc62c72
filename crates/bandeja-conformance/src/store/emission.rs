//! Emission: outbox rows commit and roll back with the caller's transaction, and an id is
//! written once.

use bandeja_core::error::StoreErrorKind;
use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Inspect;

use super::{emit, ping, request, rows};

/// Commit → rows present and PENDING; rollback → no row.
pub async fn emission_commits_with_the_transaction_and_rolls_back_with_it<S: Inspect>(store: S) {
    let kept = ping(1, "a");
    emit(&store, std::slice::from_ref(&kept)).await;
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(&mut *tx, MessageKind::Event, &[ping(2, "a")])
        .await
        .expect("insert");
    drop(tx); // rollback
    let rows = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(rows.len(), 1, "only the committed message is in the outbox");
    let row = &rows[0];
    // Stores may normalise the JSON text (PostgreSQL's JSONB reorders keys): compare values.
    let as_json = |text: &str| serde_json::from_str::<serde_json::Value>(text).expect("json");
    assert_eq!(as_json(&row.message.record.payload), as_json(&kept.payload));
    let mut normalised = row.message.record.clone();
    normalised.payload.clone_from(&kept.payload);
    assert_eq!(normalised, kept, "every field round-trips");
    assert_eq!(row.message.status, MessageStatus::Pending);
    assert_eq!(row.message.retry_count, 0);
    assert!(
        store
            .claim(BoxKind::OutboxEvents, &request("w", 10))
            .await
            .expect("claim")
            .len()
            == 1
    );
}

/// Re-inserting an id is a `Duplicate` error and the whole batch is rejected.
pub async fn duplicate_outbox_id_is_a_duplicate_error_and_writes_nothing<S: Inspect>(store: S) {
    let first = ping(1, "a");
    emit(&store, std::slice::from_ref(&first)).await;
    let mut tx = store.begin().await.expect("begin");
    let err = store
        .insert_outbox(&mut *tx, MessageKind::Event, &[ping(2, "b"), first.clone()])
        .await
        .expect_err("duplicate id must fail");
    assert_eq!(err.kind(), StoreErrorKind::Duplicate, "{err}");
    drop(tx);
    assert_eq!(rows(&store, BoxKind::OutboxEvents).await.len(), 1);
}
