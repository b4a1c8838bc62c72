//! The `Admin` conformance suite on SQLite: each test gets its own database file; the
//! archive tables are read back with SQL of their own.

use bandeja_conformance::admin::ArchivedRow;
use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use bandeja_core::{BoxKind, MessageId};
use bandeja_sqlite::SqliteStore;
use sqlx::Row;

/// A fresh, migrated store on a SQLite file of its own.
async fn fresh_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-sqlite-admin", SqliteStore::connect).await
}

/// The rows of `<box>_archive`, oldest archived first; every one has `archived_at`.
async fn archived(store: SqliteStore, box_kind: BoxKind) -> Vec<ArchivedRow> {
    let subscriber = if box_kind.is_inbox() {
        "subscriber"
    } else {
        "NULL AS subscriber"
    };
    let sql = format!(
        "SELECT id, {subscriber}, status, archived_at FROM {} ORDER BY archived_at, seq",
        bandeja_core::admin::archive_table(box_kind)
    );
    let rows = sqlx::query(&sql)
        .fetch_all(store.pool())
        .await
        .expect("read the archive");
    rows.iter()
        .map(|row| {
            let id: String = row.get("id");
            let status: String = row.get("status");
            let archived_at: String = row.get("archived_at");
            assert!(!archived_at.is_empty());
            (
                id.parse::<MessageId>().expect("id"),
                row.get("subscriber"),
                status.parse().expect("status"),
            )
        })
        .collect()
}

bandeja_conformance::admin_conformance_tests!(fresh_store, archived);
