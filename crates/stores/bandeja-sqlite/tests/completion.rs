//! The completion conformance suite on SQLite (completion modes, dedup after delete or
//! archive, retention, staleness): each test gets its own database file.

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

bandeja_conformance::completion_conformance_tests!(fresh_store);

/// The staleness suite: only a box that makes no progress has stale rows.
mod staleness {
    use super::fresh_store;
    bandeja_conformance::staleness_conformance_tests!(fresh_store);
}
