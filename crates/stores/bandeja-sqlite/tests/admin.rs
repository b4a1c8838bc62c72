//! The `Admin` conformance suite on SQLite: each test gets its own database file; the
//! archive tables are read back with SQL of their own.

use bandeja_conformance::admin::ArchivedRow;
use bandeja_core::{BoxKind, MessageId, Store};
use bandeja_sqlite::SqliteStore;
use sqlx::Row;

/// Deletes the temporary directory when the test ends.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn fresh_store() -> (SqliteStore, TempDir) {
    let dir = std::env::temp_dir().join(format!("bandeja-sqlite-admin-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let url = format!("sqlite://{}", dir.join("boxes.db").display());
    let store = SqliteStore::connect(&url).await.expect("open");
    store.migrate().await.expect("migrate");
    (store, TempDir(dir))
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
