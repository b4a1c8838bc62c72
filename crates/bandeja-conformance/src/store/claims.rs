//! Claims: due rows in `seq` order, each handed out once (also to workers claiming at once),
//! and released without spending a retry.

use std::collections::HashSet;

use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Resolution};

use super::{emit, ids, outcome, ping, request, rows};

/// Claims take due rows by `seq`, set PROCESSING and the lease, and never hand a row out twice.
pub async fn claims_in_seq_order_with_a_lease<S: Inspect>(store: S) {
    let records: Vec<_> = (0..5).map(|n| ping(n, &format!("k{n}"))).collect();
    emit(&store, &records).await;
    let first = store
        .claim(BoxKind::OutboxEvents, &request("w1", 3))
        .await
        .expect("claim");
    assert_eq!(
        ids(&first),
        records[..3].iter().map(|r| r.id).collect::<Vec<_>>()
    );
    assert!(first.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(first
        .iter()
        .all(|m| m.status == MessageStatus::Processing && !m.reclaimed()));
    let second = store
        .claim(BoxKind::OutboxEvents, &request("w2", 10))
        .await
        .expect("claim");
    assert_eq!(
        ids(&second),
        records[3..].iter().map(|r| r.id).collect::<Vec<_>>()
    );
    assert!(store
        .claim(BoxKind::OutboxEvents, &request("w3", 10))
        .await
        .expect("claim")
        .is_empty());
    let rows = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(rows[0].locked_by.as_deref(), Some("w1"));
    assert_eq!(rows[4].locked_by.as_deref(), Some("w2"));
    assert!(rows
        .iter()
        .all(|r| r.locked_until.is_some_and(|t| t > chrono::Utc::now())));
}

/// Release (shutdown) returns rows to PENDING, due now, retry count unchanged.
pub async fn release_returns_rows_without_spending_retries<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a")]).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    store
        .resolve(
            BoxKind::OutboxEvents,
            "w",
            &[outcome(&claimed[0], Resolution::Release)],
        )
        .await
        .expect("resolve");
    let again = store
        .claim(BoxKind::OutboxEvents, &request("w2", 10))
        .await
        .expect("claim");
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].retry_count, 0);
    assert!(!again[0].reclaimed());
}

/// Four workers claiming at once get disjoint sets that together cover every row.
pub async fn concurrent_claims_never_overlap<S: Inspect>(store: S) {
    let records: Vec<_> = (0..200).map(|n| ping(n, &format!("k{n}"))).collect();
    emit(&store, &records).await;
    let mut tasks = Vec::new();
    for w in 0..4 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let worker = format!("w{w}");
            let mut mine = Vec::new();
            loop {
                let got = store
                    .claim(BoxKind::OutboxEvents, &request(&worker, 7))
                    .await
                    .expect("claim");
                if got.is_empty() {
                    break mine;
                }
                mine.extend(ids(&got));
            }
        }));
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for task in tasks {
        let mine = task.await.expect("task");
        total += mine.len();
        seen.extend(mine);
    }
    assert_eq!(total, 200, "no row claimed twice");
    assert_eq!(seen.len(), 200, "every row claimed");
}
