//! The store conformance suite on PostgreSQL: each test gets its own schema (see `common`).

mod common;

use common::fresh_store;

bandeja_conformance::store_conformance_tests!(fresh_store);

mod runtime {
    use super::fresh_store;
    bandeja_conformance::runtime_conformance_tests!(fresh_store);
}

/// A claimed row whose stored headers are not a headers object is FAILED with the decode
/// error, and blocks nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_claimed_row_is_failed_with_the_decode_error() {
    let (store, _guard) = fresh_store().await;
    let bad = bandeja_conformance::standalone::an_undecodable_claimed_row_blocks_nothing(
        store.clone(),
        |store, id| async move {
            let sql = format!(
                "UPDATE \"{}\".outbox_events SET headers = '[]'::jsonb WHERE id = $1",
                store.schema()
            );
            sqlx::query(&sql)
                .bind(id.0)
                .execute(store.pool())
                .await
                .expect("corrupt the row");
        },
    )
    .await;
    let (status, error): (String, Option<String>) = sqlx::query_as(&format!(
        "SELECT status, last_error FROM \"{}\".outbox_events WHERE id = $1",
        store.schema()
    ))
    .bind(bad.0)
    .fetch_one(store.pool())
    .await
    .expect("the bad row");
    assert_eq!(status, "FAILED");
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("cannot be read")),
        "{error:?}"
    );
}
