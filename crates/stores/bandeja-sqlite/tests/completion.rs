//! The completion conformance suite on SQLite (completion modes, dedup after delete or
//! archive, retention, staleness): each test gets its own database file.

use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use bandeja_sqlite::SqliteStore;

/// A fresh, migrated store on a SQLite file of its own.
async fn fresh_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-sqlite", SqliteStore::connect).await
}

bandeja_conformance::completion_conformance_tests!(fresh_store);

/// The staleness suite: only a box that makes no progress has stale rows.
mod staleness {
    use super::fresh_store;
    bandeja_conformance::staleness_conformance_tests!(fresh_store);
}
