//! Discard, archive pruning, the attempts of a message and the per-minute timeline on
//! PostgreSQL (see [`bandeja_core::admin::Admin::discard`] and the methods after it). The
//! attempts history itself is written by the outcome statement (`crate::attempts`).

use bandeja_core::admin::{
    archive_table, merge_timeline, timeline_start, AttemptView, Discard, MessageFilter,
    MinuteCount, MinuteStats,
};
use bandeja_core::{BoxKind, MessageId, StoreError, StoreErrorKind};
use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::Row;

use super::sql::{self, BATCH};
use crate::{sqlx_error, PgStore};

fn bad(what: impl Into<bandeja_core::BoxError>) -> StoreError {
    StoreError::new(StoreErrorKind::Permanent, "decode the timeline", what)
}

/// Moves the FAILED rows of `filter` into the archives, one statement per batch.
pub(super) async fn discard(
    store: &PgStore,
    filter: &MessageFilter,
    discard: &Discard,
) -> Result<u64, StoreError> {
    filter.check_discard()?;
    let full = u64::try_from(BATCH).unwrap_or(u64::MAX);
    let mut total = 0;
    for box_kind in filter.boxes() {
        let statement = sql::discard(store.schema(), box_kind, filter, discard);
        loop {
            let moved = statement
                .query()
                .execute(store.pool())
                .await
                .map_err(|e| sqlx_error("discard FAILED rows", e))?
                .rows_affected();
            total += moved;
            if moved < full {
                break;
            }
        }
    }
    Ok(total)
}

/// Deletes the attempts of `box_kind` recorded before `older_than` whose row is gone.
pub(super) async fn purge_attempts(
    store: &PgStore,
    box_kind: BoxKind,
    older_than: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let statement = crate::attempts::purge_orphans(store.schema(), box_kind, "$1::timestamptz");
    store
        .in_batches(&statement, older_than, "purge old attempts")
        .await
}

/// Deletes archived rows archived before `older_than`, then the attempts left without a row.
pub(super) async fn purge_archive(
    store: &PgStore,
    box_kind: BoxKind,
    older_than: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let statement = sql::purge_archive(store.schema(), box_kind);
    let purged = store
        .in_batches(&statement, older_than, "purge archived rows")
        .await?;
    purge_attempts(store, box_kind, older_than).await?;
    Ok(purged)
}

/// Every attempt of message `id`, oldest first.
pub(super) async fn attempts(
    store: &PgStore,
    id: MessageId,
) -> Result<Vec<AttemptView>, StoreError> {
    let rows = sqlx::query(&crate::attempts::of_message(store.schema()))
        .bind(id.0)
        .fetch_all(store.pool())
        .await
        .map_err(|e| sqlx_error("read the attempts", e))?;
    rows.iter().map(crate::attempts::view).collect()
}

/// The start of the minute of a time column, as seconds since the epoch.
fn minute_of(column: &str) -> String {
    format!("(floor(extract(epoch FROM {column}) / 60) * 60)::int8")
}

/// `$1` the first minute: per minute, the rows of `table` completed since then, with their
/// lags in seconds. Through the BRIN index on `completed_at` of a box, or (`archived`) on
/// `archived_at` of an archive (a row is archived after it completes).
fn completions(table: &str, archived: bool) -> String {
    let archived = if archived {
        "archived_at >= $1::timestamptz AND "
    } else {
        ""
    };
    let lag = "extract(epoch FROM (completed_at - created_at))::float8";
    format!(
        "SELECT {minute} AS minute, count(*) AS n, max({lag}) AS lag_max, sum({lag}) AS lag_sum \
         FROM {table} WHERE {archived}completed_at >= $1::timestamptz GROUP BY 1",
        minute = minute_of("completed_at"),
    )
}

/// `$1` the first minute: failed attempts per box and minute (the `at` index).
fn failed_per_minute(schema: &str) -> String {
    format!(
        "SELECT box, {} AS minute, count(*) AS n FROM {} WHERE at >= $1::timestamptz GROUP BY 1, 2",
        minute_of("at"),
        crate::attempts::table(schema)
    )
}

fn decode_minute(row: &PgRow) -> Result<(DateTime<Utc>, u64), StoreError> {
    let minute: i64 = row.try_get("minute").map_err(bad)?;
    let n: i64 = row.try_get("n").map_err(bad)?;
    let minute = DateTime::<Utc>::from_timestamp(minute, 0)
        .ok_or_else(|| bad(format!("minute out of range: {minute}")))?;
    Ok((minute, u64::try_from(n).unwrap_or(0)))
}

/// The per-minute timeline since `since`.
pub(super) async fn timeline(
    store: &PgStore,
    since: DateTime<Utc>,
) -> Result<Vec<MinuteStats>, StoreError> {
    let start = timeline_start(since, Utc::now())?;
    let schema = store.schema();
    let mut handled = Vec::new();
    for box_kind in BoxKind::ALL {
        for (table, archived) in [
            (sql::table(schema, box_kind), false),
            (format!("\"{schema}\".{}", archive_table(box_kind)), true),
        ] {
            let rows = sqlx::query(&completions(&table, archived))
                .bind(start)
                .fetch_all(store.pool())
                .await
                .map_err(|e| sqlx_error("read the timeline", e))?;
            for row in &rows {
                let (minute, count) = decode_minute(row)?;
                handled.push(MinuteCount {
                    minute,
                    box_kind,
                    count,
                    lag_max_seconds: row.try_get("lag_max").map_err(bad)?,
                    lag_sum_seconds: row.try_get("lag_sum").map_err(bad)?,
                });
            }
        }
    }
    let rows = sqlx::query(&failed_per_minute(schema))
        .bind(start)
        .fetch_all(store.pool())
        .await
        .map_err(|e| sqlx_error("read the timeline", e))?;
    let mut failed = Vec::with_capacity(rows.len());
    for row in &rows {
        let table: String = row.try_get("box").map_err(bad)?;
        let (minute, count) = decode_minute(row)?;
        failed.push(MinuteCount {
            minute,
            box_kind: table.parse().map_err(bad)?,
            count,
            lag_max_seconds: 0.0,
            lag_sum_seconds: 0.0,
        });
    }
    Ok(merge_timeline(&handled, &failed))
}
