//! Discard, archive pruning, the attempts of a message and the per-minute timeline on
//! SQLite (see [`bandeja_core::admin::Admin::discard`] and the methods after it). The
//! attempts history itself is written with the outcomes (`crate::attempts`).

use bandeja_core::admin::{
    merge_timeline, timeline_start, AttemptView, Discard, MessageFilter, MinuteCount, MinuteStats,
};
use bandeja_core::{BoxKind, MessageId, Store, StoreError, StoreErrorKind};
use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use super::sql::{self, BATCH};
use crate::decode::{bad, parse_time};
use crate::{sqlx_error, SqliteStore};

/// Whether a batch came back full (another may follow).
fn full_batch(value: u64) -> bool {
    value >= u64::try_from(BATCH).unwrap_or(u64::MAX)
}

/// Moves the FAILED rows of `filter` into the archives, batch by batch.
pub(super) async fn discard(
    store: &SqliteStore,
    filter: &MessageFilter,
    discard: &Discard,
) -> Result<u64, StoreError> {
    filter.check_discard()?;
    let mut total = 0;
    for box_kind in filter.boxes() {
        let (copy, delete) = sql::discard(box_kind, filter, discard);
        loop {
            let mut tx = store.begin().await?;
            let copied = copy
                .query()
                .execute(&mut *tx)
                .await
                .map_err(|e| sqlx_error("copy FAILED rows to the archive", e))?
                .rows_affected();
            let deleted = delete
                .query()
                .execute(&mut *tx)
                .await
                .map_err(|e| sqlx_error("delete discarded rows", e))?
                .rows_affected();
            if copied != deleted {
                // Cannot happen inside one write transaction; roll back rather than lose rows.
                return Err(StoreError::new(
                    StoreErrorKind::Permanent,
                    "discard messages",
                    format!("copied {copied} rows but would delete {deleted}: rolled back"),
                ));
            }
            store.commit(tx).await?;
            total += copied;
            if !full_batch(copied) {
                break;
            }
        }
    }
    Ok(total)
}

/// Runs `statement` (`?1` horizon text, `?2` batch size) until a batch comes back short.
pub(super) async fn in_batches(
    store: &SqliteStore,
    statement: &str,
    horizon: &str,
    operation: &'static str,
) -> Result<u64, StoreError> {
    let mut total = 0;
    loop {
        let done = sqlx::query(statement)
            .bind(horizon)
            .bind(BATCH)
            .execute(store.pool())
            .await
            .map_err(|e| sqlx_error(operation, e))?;
        total += done.rows_affected();
        if !full_batch(done.rows_affected()) {
            return Ok(total);
        }
    }
}

/// Deletes the attempts of `box_kind` recorded before `horizon` whose row is gone.
pub(super) async fn purge_attempts(
    store: &SqliteStore,
    box_kind: BoxKind,
    horizon: &str,
) -> Result<u64, StoreError> {
    let statement = crate::attempts::purge_orphans(box_kind, "?1");
    in_batches(store, &statement, horizon, "purge old attempts").await
}

/// Deletes archived rows archived before `older_than`, then the attempts left without a row.
pub(super) async fn purge_archive(
    store: &SqliteStore,
    box_kind: BoxKind,
    older_than: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let horizon = sql::horizon_text(older_than);
    let purged = in_batches(
        store,
        &sql::purge_archive(box_kind),
        &horizon,
        "purge archived rows",
    )
    .await?;
    purge_attempts(store, box_kind, &horizon).await?;
    Ok(purged)
}

/// Every attempt of message `id`, oldest first.
pub(super) async fn attempts(
    store: &SqliteStore,
    id: MessageId,
) -> Result<Vec<AttemptView>, StoreError> {
    let rows = sqlx::query(crate::attempts::OF_MESSAGE)
        .bind(id.to_string())
        .fetch_all(store.pool())
        .await
        .map_err(|e| sqlx_error("read the attempts", e))?;
    rows.iter().map(crate::attempts::view).collect()
}

/// `?1` the first minute (text): per minute, the rows of `table` completed since then
/// (`archived`: archived since then too, through the `archived_at` index; otherwise
/// through the partial `completed_at` index), with their lags in seconds.
fn completions(table: &str, archived: bool) -> String {
    let archived = if archived {
        "archived_at >= ?1 AND "
    } else {
        ""
    };
    format!(
        "SELECT substr(completed_at, 1, 16) AS minute, count(*) AS n, max(lag) AS lag_max, \
           sum(lag) AS lag_sum \
         FROM (SELECT completed_at, \
                 (julianday(completed_at) - julianday(created_at)) * 86400.0 AS lag \
               FROM {table} WHERE {archived}completed_at >= ?1) \
         GROUP BY minute"
    )
}

/// `?1` the first minute: failed attempts per box and minute (the `at` index).
const FAILED_PER_MINUTE: &str = "SELECT box, substr(at, 1, 16) AS minute, count(*) AS n \
     FROM message_attempts WHERE at >= ?1 GROUP BY box, minute";

/// `2024-05-01T10:07` → the start of that minute.
fn minute_of(row: &SqliteRow) -> Result<DateTime<Utc>, StoreError> {
    let minute: String = row.try_get("minute").map_err(bad)?;
    parse_time(&format!("{minute}:00Z"))
}

fn counted(row: &SqliteRow) -> Result<u64, StoreError> {
    let n: i64 = row.try_get("n").map_err(bad)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The per-minute timeline since `since`.
pub(super) async fn timeline(
    store: &SqliteStore,
    since: DateTime<Utc>,
) -> Result<Vec<MinuteStats>, StoreError> {
    let start = sql::time_text(timeline_start(since, Utc::now())?);
    let mut handled = Vec::new();
    for box_kind in BoxKind::ALL {
        for (table, archived) in [
            (box_kind.table(), false),
            (bandeja_core::admin::archive_table(box_kind), true),
        ] {
            let rows = sqlx::query(&completions(table, archived))
                .bind(&start)
                .fetch_all(store.pool())
                .await
                .map_err(|e| sqlx_error("read the timeline", e))?;
            for row in &rows {
                handled.push(MinuteCount {
                    minute: minute_of(row)?,
                    box_kind,
                    count: counted(row)?,
                    lag_max_seconds: row.try_get("lag_max").map_err(bad)?,
                    lag_sum_seconds: row.try_get("lag_sum").map_err(bad)?,
                });
            }
        }
    }
    let rows = sqlx::query(FAILED_PER_MINUTE)
        .bind(&start)
        .fetch_all(store.pool())
        .await
        .map_err(|e| sqlx_error("read the timeline", e))?;
    let mut failed = Vec::with_capacity(rows.len());
    for row in &rows {
        let table: String = row.try_get("box").map_err(bad)?;
        failed.push(MinuteCount {
            minute: minute_of(row)?,
            box_kind: table.parse().map_err(bad)?,
            count: counted(row)?,
            lag_max_seconds: 0.0,
            lag_sum_seconds: 0.0,
        });
    }
    Ok(merge_timeline(&handled, &failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of `sql` on a migrated in-memory store, one line per step.
    async fn plan(sql: &str) -> Vec<String> {
        let store = SqliteStore::connect("sqlite::memory:").await.expect("open");
        store.migrate().await.expect("migrate");
        sqlx::query(&format!("EXPLAIN QUERY PLAN {sql}"))
            .bind("2000-01-01T00:00:00.000Z")
            .bind(1_i64)
            .fetch_all(store.pool())
            .await
            .expect("explain")
            .iter()
            .map(|row| row.get::<String, _>("detail"))
            .collect()
    }

    #[tokio::test]
    async fn the_timeline_reads_index_ranges_only() {
        for box_kind in BoxKind::ALL {
            let t = box_kind.table();
            let live = plan(&completions(t, false)).await;
            assert!(
                live.iter()
                    .any(|s| s.contains(&format!("USING INDEX {t}_completed"))),
                "{live:?}"
            );
            let archive = bandeja_core::admin::archive_table(box_kind);
            let archived = plan(&completions(archive, true)).await;
            assert!(
                archived
                    .iter()
                    .any(|s| s.contains(&format!("USING INDEX {archive}_archived"))),
                "{archived:?}"
            );
        }
        let failed = plan(FAILED_PER_MINUTE).await;
        assert!(
            failed.iter().any(|s| s.contains("message_attempts_at")),
            "{failed:?}"
        );
    }
}
