//! The store conformance suite on SQLite: each test gets its own database file.

use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use bandeja_sqlite::SqliteStore;

/// A fresh, migrated store on a SQLite file of its own.
async fn fresh_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-sqlite", SqliteStore::connect).await
}

bandeja_conformance::store_conformance_tests!(fresh_store);

/// A claimed row whose stored headers are not a headers object is FAILED with the decode
/// error, and blocks nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_claimed_row_is_failed_with_the_decode_error() {
    let (store, _dir) = fresh_store().await;
    let bad = bandeja_conformance::standalone::an_undecodable_claimed_row_blocks_nothing(
        store.clone(),
        |store, id| async move {
            sqlx::query("UPDATE outbox_events SET headers = '[]' WHERE id = ?1")
                .bind(id.to_string())
                .execute(store.pool())
                .await
                .expect("corrupt the row");
        },
    )
    .await;
    let (status, error): (String, Option<String>) =
        sqlx::query_as("SELECT status, last_error FROM outbox_events WHERE id = ?1")
            .bind(bad.to_string())
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

mod runtime {
    use super::fresh_store;
    bandeja_conformance::runtime_conformance_tests!(fresh_store);
}

/// The transport conformance suite on the direct (broker-less) transport: the services of
/// one test share one `DirectTransport` per namespace.
mod direct_transport {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};

    use bandeja_core::transport::direct::DirectTransport;
    use bandeja_core::transport::Transport;

    use super::fresh_store;

    async fn direct(namespace: String) -> Arc<dyn Transport> {
        static SHARED: OnceLock<Mutex<HashMap<String, DirectTransport>>> = OnceLock::new();
        let mut shared = SHARED
            .get_or_init(Mutex::default)
            .lock()
            .expect("transports");
        Arc::new(shared.entry(namespace).or_default().clone())
    }

    bandeja_conformance::transport_conformance_tests!(fresh_store, direct);
}
