//! The SQL that differs by completion mode (`delete`, `archive`) and the retention purge
//! (the staleness statements are in `staleness`). In `update` mode only the statements of
//! `queries` run.
//!
//! In `delete`/`archive` mode the resolve `UPDATE` runs as usual, then, in the same
//! transaction and with the same JSON parameter, the rows it completed are copied into
//! `<box>_archive` (archive) and deleted. Inbox dedup: an insert skips the pairs that the
//! inbox's ledger `<box>_dedup` holds and whose row is gone, then records its pairs in the
//! ledger (SQLite has one writer at a time, so the check is exact).

use bandeja_core::{BoxKind, CompletionMode};

use crate::queries::{COMMON_COLUMNS, NOW};

/// The statements a completion mode adds to `resolve`.
#[derive(Default)]
pub(crate) struct CompletionSql {
    /// Copies the rows of `?1` that are COMPLETED into the archive (archive mode).
    pub(crate) archive: Option<String>,
    /// Deletes the rows of `?1` that are COMPLETED (delete and archive modes).
    pub(crate) delete: Option<String>,
}

/// The rows of the JSON outcomes `?1` whose outcome and status are COMPLETED, by `seq`.
fn completed_rows(t: &str, inbox: bool) -> String {
    let subscriber = if inbox {
        "AND b.subscriber = json_extract(j.value, '$.sub')"
    } else {
        ""
    };
    format!(
        "SELECT b.seq FROM json_each(?1) AS j JOIN {t} AS b ON b.id = json_extract(j.value, '$.id') \
         {subscriber} WHERE json_extract(j.value, '$.status') = 'COMPLETED' AND b.status = 'COMPLETED'"
    )
}

/// The box's columns that its archive repeats (all but `archived_at`).
pub(crate) fn archive_columns(inbox: bool) -> String {
    let extra = if inbox {
        ", last_modified_at, resubmitted_count, resubmitted_at, subscriber, received_at, delivery_count"
    } else {
        ", last_modified_at, resubmitted_count, resubmitted_at"
    };
    format!("{COMMON_COLUMNS}{extra}")
}

impl CompletionSql {
    pub(crate) fn new(box_kind: BoxKind, mode: CompletionMode) -> Self {
        let t = box_kind.table();
        let inbox = box_kind.is_inbox();
        let rows = completed_rows(t, inbox);
        let columns = archive_columns(inbox);
        CompletionSql {
            archive: (mode == CompletionMode::Archive).then(|| {
                format!(
                    "INSERT INTO {t}_archive ({columns}, archived_at) \
                     SELECT {columns}, {NOW} FROM {t} WHERE seq IN ({rows})"
                )
            }),
            delete: (mode != CompletionMode::Update)
                .then(|| format!("DELETE FROM {t} WHERE seq IN ({rows})")),
        }
    }
}

/// `?1` = JSON array of inbox rows: records their pairs in the ledger.
pub(crate) fn record_in_ledger(t: &str) -> String {
    format!(
        "INSERT OR IGNORE INTO {t}_dedup (id, subscriber, received_at) \
         SELECT json_extract(value, '$.id'), json_extract(value, '$.subscriber'), {NOW} \
         FROM json_each(?1) ORDER BY key"
    )
}

/// The condition on a JSON inbox row (`value`) that keeps it out of an inbox with a
/// ledger: the ledger holds its pair and its row is gone.
pub(crate) fn absorbed_by_ledger(t: &str) -> String {
    format!(
        "AND NOT EXISTS (SELECT 1 FROM {t}_dedup AS d \
           WHERE d.id = json_extract(value, '$.id') AND d.subscriber = json_extract(value, '$.subscriber') \
           AND NOT EXISTS (SELECT 1 FROM {t} AS x WHERE x.id = d.id AND x.subscriber = d.subscriber))"
    )
}

/// Retention: `?1` = modifier (`-3600.000 seconds`). Deletes up to 10 000 COMPLETED rows
/// completed at least that long ago.
pub(crate) fn purge(t: &str) -> String {
    format!(
        "DELETE FROM {t} WHERE seq IN (SELECT seq FROM {t} WHERE status = 'COMPLETED' \
           AND completed_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1) LIMIT 10000)"
    )
}

/// Retention of an inbox's ledger: `?1` as for [`purge`]; records received that long ago
/// whose row is gone.
pub(crate) fn purge_ledger(t: &str) -> String {
    format!(
        "DELETE FROM {t}_dedup WHERE rowid IN (SELECT d.rowid FROM {t}_dedup AS d \
           WHERE d.received_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1) \
           AND NOT EXISTS (SELECT 1 FROM {t} AS b WHERE b.id = d.id AND b.subscriber = d.subscriber) \
           LIMIT 10000)"
    )
}

/// Every archived row of a box, by `seq`, with the columns `decode` reads.
pub(crate) fn archived_rows(box_kind: BoxKind) -> String {
    let t = box_kind.table();
    if box_kind.is_inbox() {
        format!("SELECT {COMMON_COLUMNS}, subscriber, delivery_count FROM {t}_archive ORDER BY seq, subscriber")
    } else {
        format!("SELECT {COMMON_COLUMNS}, NULL AS subscriber, 1 AS delivery_count FROM {t}_archive ORDER BY seq")
    }
}
