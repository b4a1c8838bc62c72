//! The store conformance suite on SQLite: each test gets its own database file.

use bandeja_core::Store;
use bandeja_sqlite::SqliteStore;

/// Deletes the temporary directory when the test ends.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn fresh_store() -> (SqliteStore, TempDir) {
    let dir = std::env::temp_dir().join(format!("bandeja-sqlite-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let url = format!("sqlite://{}", dir.join("boxes.db").display());
    let store = SqliteStore::connect(&url).await.expect("open");
    store.migrate().await.expect("migrate");
    (store, TempDir(dir))
}

bandeja_core::store_conformance_tests!(fresh_store);

mod runtime {
    use super::fresh_store;
    bandeja_core::runtime_conformance_tests!(fresh_store);
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

    bandeja_core::transport_conformance_tests!(fresh_store, direct);
}
