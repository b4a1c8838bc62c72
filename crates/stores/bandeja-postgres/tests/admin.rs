//! The `Admin` conformance suite on PostgreSQL: each test gets its own schema (see
//! `common`); the archive tables are read back with SQL of their own.

mod common;

use bandeja_core::conformance::admin::ArchivedRow;
use bandeja_core::{BoxKind, MessageId};
use bandeja_postgres::PgStore;
use chrono::{DateTime, Utc};
use common::fresh_store;
use sqlx::Row;

/// The rows of `<box>_archive`, oldest archived first; every one has `archived_at`.
async fn archived(store: PgStore, box_kind: BoxKind) -> Vec<ArchivedRow> {
    let subscriber = if box_kind.is_inbox() {
        "subscriber"
    } else {
        "NULL::text AS subscriber"
    };
    let sql = format!(
        "SELECT id, {subscriber}, status, archived_at FROM \"{}\".{} ORDER BY archived_at, seq",
        store.schema(),
        bandeja_core::admin::archive_table(box_kind)
    );
    let rows = sqlx::query(&sql)
        .fetch_all(store.pool())
        .await
        .expect("read the archive");
    rows.iter()
        .map(|row| {
            let id: uuid::Uuid = row.get("id");
            let status: String = row.get("status");
            let archived_at: DateTime<Utc> = row.get("archived_at");
            assert!(archived_at <= Utc::now());
            (
                MessageId(id),
                row.get("subscriber"),
                status.parse().expect("status"),
            )
        })
        .collect()
}

bandeja_core::admin_conformance_tests!(fresh_store, archived);
