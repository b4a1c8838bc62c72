//! Leases: only the holder completes a row, an expired lease is taken over, renewal extends
//! the leases of the rows still held and nothing else.

use std::time::Duration;

use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{ClaimRequest, Inspect, Resolution, RowView};

use super::{emit, outcome, ping, request, rows};

/// COMPLETED only by the worker that holds the claim.
pub async fn completion_is_guarded_by_the_lease_holder<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a")]).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w1", 10))
        .await
        .expect("claim");
    store
        .resolve(
            BoxKind::OutboxEvents,
            "intruder",
            &[outcome(&claimed[0], Resolution::Completed)],
        )
        .await
        .expect("resolve");
    assert_eq!(
        rows(&store, BoxKind::OutboxEvents).await[0].message.status,
        MessageStatus::Processing
    );
    store
        .resolve(
            BoxKind::OutboxEvents,
            "w1",
            &[outcome(&claimed[0], Resolution::Completed)],
        )
        .await
        .expect("resolve");
    let row = &rows(&store, BoxKind::OutboxEvents).await[0];
    assert_eq!(row.message.status, MessageStatus::Completed);
    assert!(row.completed_at.is_some());
    assert!(row.locked_by.is_none());
}

/// A lease that expired is taken over: the takeover is counted (not as a failed attempt:
/// the retry count stays), the claim names the old holder, and the old holder can no
/// longer change the row.
pub async fn expired_lease_is_reclaimed_by_another_worker<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a")]).await;
    let short = ClaimRequest {
        lease: Duration::from_millis(1),
        ..request("dead", 10)
    };
    let claimed = store
        .claim(BoxKind::OutboxEvents, &short)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    let taken = bandeja_core::testing::eventually(Duration::from_secs(5), || async {
        let got = store
            .claim(BoxKind::OutboxEvents, &request("alive", 10))
            .await
            .expect("claim");
        (!got.is_empty()).then_some(got)
    })
    .await
    .expect("the expired lease is taken over");
    assert_eq!(taken[0].taken_over_from.as_deref(), Some("dead"));
    assert_eq!(taken[0].takeovers, 1);
    assert_eq!(
        taken[0].retry_count, 0,
        "a takeover is not a failed attempt"
    );
    store
        .resolve(
            BoxKind::OutboxEvents,
            "dead",
            &[outcome(&claimed[0], Resolution::Completed)],
        )
        .await
        .expect("resolve");
    let row = &rows(&store, BoxKind::OutboxEvents).await[0];
    assert_eq!(
        (row.message.status, row.locked_by.as_deref()),
        (MessageStatus::Processing, Some("alive"))
    );
}

/// Renewal gives a new lease to every row the worker still holds, in one call, and to
/// nothing else: not to a row it completed, not to another worker's rows.
pub async fn renewal_extends_the_lease_of_the_rows_still_held_only<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a"), ping(2, "b"), ping(3, "c")]).await;
    let short = ClaimRequest {
        lease: Duration::from_secs(2),
        ..request("holder", 2)
    };
    let claimed = store
        .claim(BoxKind::OutboxEvents, &short)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 2);
    let other = store
        .claim(BoxKind::OutboxEvents, &request("other", 10))
        .await
        .expect("claim");
    assert_eq!(other.len(), 1);
    store
        .resolve(
            BoxKind::OutboxEvents,
            "holder",
            &[outcome(&claimed[0], Resolution::Completed)],
        )
        .await
        .expect("resolve");
    let before = rows(&store, BoxKind::OutboxEvents).await;
    let renewed = store
        .renew(BoxKind::OutboxEvents, "holder", Duration::from_secs(60))
        .await
        .expect("renew");
    assert_eq!(
        renewed,
        vec![(claimed[1].record.id, None)],
        "only the row the holder still holds"
    );
    let after = rows(&store, BoxKind::OutboxEvents).await;
    let until = |rows: &[RowView], id| {
        rows.iter()
            .find(|r| r.message.record.id == id)
            .and_then(|r| r.locked_until)
    };
    let held = claimed[1].record.id;
    let extended = until(&after, held)
        .zip(until(&before, held))
        .map(|(after, before)| (after - before).num_seconds());
    assert!(
        extended.is_some_and(|s| s >= 50),
        "the held row's lease moved forward by about 58 s: {extended:?}"
    );
    let others = other[0].record.id;
    assert_eq!(
        until(&after, others),
        until(&before, others),
        "another worker's row"
    );
    assert_eq!(until(&after, claimed[0].record.id), None, "a completed row");
}
