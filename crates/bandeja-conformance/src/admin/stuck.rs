//! The `stuck` counter of the `Admin` suite: PENDING rows left alone longer than the
//! threshold, counted from their last change.

use std::time::Duration;

use bandeja_core::admin::{Admin, MessageFilter};
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;

use super::{claim_all, failed, fixture, outbox_view, outcome, record, ACME, GLOBEX, HOUR};
use crate::store::emit;

/// A PENDING row is stuck once it is older than the threshold; other statuses never are.
pub async fn stuck_counts_pending_rows_older_than_the_threshold<S: Admin>(store: S) {
    fixture(&store).await;
    let counters = store.counters(HOUR, false).await.expect("counters");
    assert_eq!(counters[0].stuck, 0);
    let stuck = bandeja_core::testing::eventually(Duration::from_secs(10), || async {
        let c = store
            .counters(Duration::ZERO, false)
            .await
            .expect("counters");
        (c[0].stuck == 2).then_some(c)
    })
    .await
    .expect("both PENDING rows become stuck with a zero threshold");
    assert_eq!(
        stuck[1].stuck, 0,
        "FAILED and COMPLETED rows are never stuck"
    );
    let per_tenant = store
        .counters(Duration::ZERO, true)
        .await
        .expect("counters");
    assert!(per_tenant
        .iter()
        .filter(|c| c.box_kind == BoxKind::OutboxEvents)
        .all(|c| c.stuck == 1));
}

/// Stuck counts from a row's last change (`last_modified_at`, seed 000's
/// `lastModifiedDate`), not from its creation. An acme row FAILED, then a globex row left
/// PENDING and untouched beyond the threshold: that one is stuck. Then an operator retries
/// the older FAILED row: it is PENDING again but not stuck, and `oldest_pending_at` stays
/// the untouched row's last change, not the retried row's (older) creation. Left alone
/// beyond the threshold in turn, the retried row becomes stuck too.
pub async fn stuck_counts_from_the_last_change_so_a_retried_old_row_is_not_stuck<S: Admin>(
    store: S,
) {
    const THRESHOLD: Duration = Duration::from_secs(2);
    let old = record(11, ACME);
    emit(&store, std::slice::from_ref(&old)).await;
    assert_eq!(claim_all(&store, BoxKind::OutboxEvents).await, 1);
    let outcomes = [outcome(old.id, None, failed("boom", 3))];
    store
        .resolve(BoxKind::OutboxEvents, "w", &outcomes)
        .await
        .expect("resolve");
    // Distinct creation times on any clock (SQLite records milliseconds).
    tokio::time::sleep(Duration::from_millis(20)).await;
    let untouched = record(12, GLOBEX);
    emit(&store, std::slice::from_ref(&untouched)).await;

    let outbox_counters = |by_tenant| {
        let store = &store;
        async move {
            let all = store
                .counters(THRESHOLD, by_tenant)
                .await
                .expect("counters");
            all.into_iter()
                .filter(|c| c.box_kind == BoxKind::OutboxEvents)
                .collect::<Vec<_>>()
        }
    };
    bandeja_core::testing::eventually(Duration::from_secs(20), || async {
        let c = outbox_counters(false).await;
        (c[0].stuck == 1).then_some(())
    })
    .await
    .expect("the untouched PENDING row becomes stuck");

    let failed_before = outbox_view(&store, old.id).await;
    let waiting = outbox_view(&store, untouched.id).await;
    assert_eq!(failed_before.message.status, MessageStatus::Failed);
    assert!(failed_before.created_at < waiting.created_at);

    let retried_at = std::time::Instant::now();
    let one = MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        id: Some(old.id),
        ..Default::default()
    };
    assert_eq!(store.retry(&one).await.expect("retry"), 1);
    let total = outbox_counters(false).await;
    let per_tenant = outbox_counters(true).await;
    let in_time = retried_at.elapsed() < THRESHOLD;

    let retried = outbox_view(&store, old.id).await;
    assert_eq!(retried.message.status, MessageStatus::Pending);
    assert_eq!(retried.created_at, failed_before.created_at);
    assert!(retried.last_modified_at > waiting.last_modified_at);
    let total = &total[0];
    assert_eq!(total.pending, 2, "{total:?}");
    assert_eq!(
        total.oldest_pending_at,
        Some(waiting.last_modified_at),
        "the untouched row's last change, not the retried row's creation"
    );
    // The retried row can be stuck only THRESHOLD after its retry: counts read before
    // that (always, unless the machine stalled for seconds) are conclusive.
    if in_time {
        assert_eq!(total.stuck, 1, "the retried row is not stuck: {total:?}");
        let stuck: Vec<_> = per_tenant
            .iter()
            .map(|c| (c.tenant.clone().unwrap_or_default(), c.pending, c.stuck))
            .collect();
        assert_eq!(
            stuck,
            vec![(ACME.to_owned(), 1, 0), (GLOBEX.to_owned(), 1, 1)]
        );
    }

    bandeja_core::testing::eventually(Duration::from_secs(20), || async {
        let c = outbox_counters(false).await;
        (c[0].stuck == 2).then_some(())
    })
    .await
    .expect("the retried row, left alone beyond the threshold, becomes stuck too");
}
