//! The SQL of the `Admin` capability on SQLite: column lists, the filter clauses (every
//! operator-typed value a bound `?`), and the decoding of the operator columns.

use bandeja_core::admin::{MessageFilter, MessageView, Page};
use bandeja_core::{BoxKind, MessageStatus, StoreError};
use chrono::{DateTime, DurationRound, Utc};
use sqlx::query::Query;
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Row, Sqlite};

use crate::completion::archive_columns;
use crate::decode::{bad, opt_time, parse_time, row_view};
use crate::queries::{COMMON_COLUMNS, NOW};

/// Rows per purge or archive batch: one short write transaction each, so workers keep going.
pub(super) const BATCH: i64 = 1000;

/// A bound value.
pub(super) enum Value {
    Text(String),
    Int(i64),
}

/// A statement and its values, bound in order.
pub(super) struct Statement {
    pub(super) sql: String,
    pub(super) values: Vec<Value>,
}

impl Statement {
    pub(super) fn query(&self) -> Query<'_, Sqlite, SqliteArguments<'_>> {
        self.values
            .iter()
            .fold(sqlx::query(&self.sql), |q, v| match v {
                Value::Text(t) => q.bind(t.as_str()),
                Value::Int(i) => q.bind(*i),
            })
    }
}

/// A time as the boxes store it: fixed-width UTC text with milliseconds, as `NOW` writes.
pub(super) fn time_text(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// An instant a time column is compared with (a purge / archive horizon, a filter's
/// `since`, `until`, `completed_before`, `archived_before`) as bound text, rounded *up*
/// to the millisecond the boxes record, so that the recorded value is what is compared:
/// a row completed at 10:00:00.123 is before a horizon of 10:00:00.123456. Truncating
/// the instant instead would spare the rows completed in its own millisecond
/// (`older_than = 0s` right after a completion would leave that row behind).
pub(super) fn horizon_text(t: DateTime<Utc>) -> String {
    let rounded = t
        .duration_round_up(chrono::TimeDelta::milliseconds(1))
        .unwrap_or(t);
    time_text(rounded)
}

/// The columns `row_view` reads plus the operator columns, of a box or (`archived`) of
/// its archive table.
fn select_columns(box_kind: BoxKind, archived: bool) -> String {
    let inbox = if box_kind.is_inbox() {
        "subscriber, delivery_count, received_at"
    } else {
        "NULL AS subscriber, 1 AS delivery_count, NULL AS received_at"
    };
    let archive = if archived {
        "archived_at, discarded_by, discard_reason"
    } else {
        "NULL AS archived_at, NULL AS discarded_by, NULL AS discard_reason"
    };
    format!(
        "{COMMON_COLUMNS}, {inbox}, last_modified_at, resubmitted_count, resubmitted_at, {archive}"
    )
}

/// The table a filter reads in a box: the box, or its archive table.
fn source(box_kind: BoxKind, archived: bool) -> &'static str {
    if archived {
        bandeja_core::admin::archive_table(box_kind)
    } else {
        box_kind.table()
    }
}

/// `AND ...` for each filter field set (the status only when `with_status`).
pub(super) fn filter_clauses(
    filter: &MessageFilter,
    with_status: bool,
    values: &mut Vec<Value>,
) -> String {
    let mut sql = String::new();
    if let Some(status) = filter.status.filter(|_| with_status) {
        // A closed enum, written as its constant text so the planner can use the partial
        // indexes; never user text.
        sql.push_str(&format!(" AND status = '{}'", status.as_str()));
    }
    let mut text = |column: &str, value: Option<String>| {
        if let Some(value) = value {
            sql.push_str(&format!(" AND {column} = ?"));
            values.push(Value::Text(value));
        }
    };
    text("tenant_id", filter.tenant.clone());
    text("message_type", filter.message_type.clone());
    text("subscriber", filter.subscriber.clone());
    text("id", filter.id.map(|id| id.to_string()));
    text(
        "json_extract(headers, '$.correlation_id')",
        filter.correlation_id.clone(),
    );
    if let Some(since) = filter.since {
        sql.push_str(" AND created_at >= ?");
        values.push(Value::Text(horizon_text(since)));
    }
    if let Some(until) = filter.until {
        sql.push_str(" AND created_at < ?");
        values.push(Value::Text(horizon_text(until)));
    }
    if let Some(before) = filter.completed_before {
        sql.push_str(" AND completed_at < ?");
        values.push(Value::Text(horizon_text(before)));
    }
    if let Some(before) = filter.archived_before {
        // Only the archive tables have the column: the callers refuse it otherwise
        // (`MessageFilter::check_read`). Rounded as `purge_archive` rounds its horizon.
        sql.push_str(" AND archived_at < ?");
        values.push(Value::Text(horizon_text(before)));
    }
    sql
}

/// How many rows of a box match `filter` (the clauses of [`list`], no page).
pub(super) fn count(box_kind: BoxKind, filter: &MessageFilter) -> Statement {
    let mut values = Vec::new();
    let clauses = filter_clauses(filter, true, &mut values);
    Statement {
        sql: format!(
            "SELECT count(*) AS n FROM {} WHERE true{clauses}",
            source(box_kind, filter.archived)
        ),
        values,
    }
}

/// One page of a box, newest first.
pub(super) fn list(box_kind: BoxKind, filter: &MessageFilter, page: Page) -> Statement {
    let mut values = Vec::new();
    let mut clauses = filter_clauses(filter, true, &mut values);
    if let Some(before) = page.before_seq {
        clauses.push_str(" AND seq < ?");
        values.push(Value::Int(before));
    }
    if let Some(after) = page.after_seq {
        clauses.push_str(" AND seq > ?");
        values.push(Value::Int(after));
    }
    values.push(Value::Int(page.sql_limit()));
    let columns = select_columns(box_kind, filter.archived);
    let table = source(box_kind, filter.archived);
    // After a `seq`: the rows closest above it, listed newest first like every page.
    let sql = match page.after_seq {
        None => {
            format!("SELECT {columns} FROM {table} WHERE true{clauses} ORDER BY seq DESC LIMIT ?")
        }
        Some(_) => format!(
            "SELECT * FROM (SELECT {columns} FROM {table} WHERE true{clauses} \
             ORDER BY seq ASC LIMIT ?) ORDER BY seq DESC"
        ),
    };
    Statement { sql, values }
}

/// The rows of one message in a box or (`archived`) in its archive (the
/// `<box>_archive_id` index), by subscriber, then oldest archived first.
pub(super) fn show(box_kind: BoxKind, archived: bool) -> String {
    format!(
        "SELECT {} FROM {} WHERE id = ?1 ORDER BY {}{}seq",
        select_columns(box_kind, archived),
        source(box_kind, archived),
        if box_kind.is_inbox() {
            "subscriber, "
        } else {
            ""
        },
        if archived { "archived_at, " } else { "" },
    )
}

/// Rows of `from_status` matching `filter` back to PENDING, due now, with fresh retry and
/// takeover budgets, the resubmission recorded.
pub(super) fn resubmit(
    box_kind: BoxKind,
    from_status: MessageStatus,
    filter: &MessageFilter,
) -> Statement {
    let mut values = Vec::new();
    let clauses = filter_clauses(filter, false, &mut values);
    Statement {
        sql: format!(
            "UPDATE {} SET status = 'PENDING', retry_count = 0, takeover_count = 0, \
               next_attempt_at = {NOW}, \
               locked_by = NULL, locked_until = NULL, completed_at = NULL, \
               last_modified_at = {NOW}, resubmitted_count = resubmitted_count + 1, \
               resubmitted_at = {NOW} \
             WHERE status = '{}'{clauses}",
            box_kind.table(),
            from_status.as_str()
        ),
        values,
    }
}

/// The `seq`s of the next batch of COMPLETED rows completed before `?1` (limit `?2`).
fn old_batch(box_kind: BoxKind) -> String {
    format!(
        "SELECT seq FROM {} WHERE status = 'COMPLETED' AND completed_at < ?1 ORDER BY seq LIMIT ?2",
        box_kind.table()
    )
}

/// Deletes the next batch of old COMPLETED rows.
pub(super) fn purge(box_kind: BoxKind) -> String {
    format!(
        "DELETE FROM {t} WHERE seq IN ({batch})",
        t = box_kind.table(),
        batch = old_batch(box_kind)
    )
}

/// Copies the next batch of old COMPLETED rows into the archive (run [`purge`] after it,
/// in the same transaction, to remove the same rows).
pub(super) fn archive(box_kind: BoxKind) -> String {
    let columns = archive_columns(box_kind.is_inbox());
    format!(
        "INSERT INTO {archive} ({columns}, archived_at) \
         SELECT {columns}, {NOW} FROM {t} WHERE seq IN ({batch}) ORDER BY seq",
        archive = bandeja_core::admin::archive_table(box_kind),
        t = box_kind.table(),
        batch = old_batch(box_kind)
    )
}

/// The next batch of FAILED rows matching `filter` (`seq IN (...)`, through the FAILED
/// index), its values appended to `values`.
fn failed_batch(box_kind: BoxKind, filter: &MessageFilter, values: &mut Vec<Value>) -> String {
    let clauses = filter_clauses(filter, false, values);
    values.push(Value::Int(BATCH));
    format!(
        "seq IN (SELECT seq FROM {} WHERE status = 'FAILED'{clauses} ORDER BY seq LIMIT ?)",
        box_kind.table()
    )
}

/// A discard batch: the copy into the archive (with who and why) and the delete of the
/// same rows, to run in one transaction.
pub(super) fn discard(
    box_kind: BoxKind,
    filter: &MessageFilter,
    discard: &bandeja_core::admin::Discard,
) -> (Statement, Statement) {
    let columns = archive_columns(box_kind.is_inbox());
    let mut copy_values = vec![
        Value::Text(discard.by.clone()),
        Value::Text(discard.reason.clone()),
    ];
    let rows = failed_batch(box_kind, filter, &mut copy_values);
    let copy = Statement {
        sql: format!(
            "INSERT INTO {archive} ({columns}, archived_at, discarded_by, discard_reason) \
             SELECT {columns}, {NOW}, ?, ? FROM {t} WHERE {rows} ORDER BY seq",
            archive = bandeja_core::admin::archive_table(box_kind),
            t = box_kind.table(),
        ),
        values: copy_values,
    };
    let mut delete_values = Vec::new();
    let rows = failed_batch(box_kind, filter, &mut delete_values);
    let delete = Statement {
        sql: format!("DELETE FROM {} WHERE {rows}", box_kind.table()),
        values: delete_values,
    };
    (copy, delete)
}

/// `?1` horizon, `?2` batch size: deletes a batch of archived rows archived before it.
pub(super) fn purge_archive(box_kind: BoxKind) -> String {
    let archive = bandeja_core::admin::archive_table(box_kind);
    format!(
        "DELETE FROM {archive} WHERE rowid IN \
           (SELECT rowid FROM {archive} WHERE archived_at < ?1 LIMIT ?2)"
    )
}

/// Per tenant and status: count, oldest `last_modified_at`, rows last modified before `?1`
/// (stuck: an old row an operator just retried is not), rows taken over at least once.
/// Live rows through the live index, FAILED rows through the FAILED index (`INDEXED BY`:
/// left to itself, SQLite walks the whole `(tenant_id, status)` index to save the sort of
/// `GROUP BY`, COMPLETED entries included), so COMPLETED rows are never visited; the
/// stuck and taken-over counts are sums over the rows these scans read anyway (no index
/// holds a time column, so `last_modified_at` costs what `created_at` did).
pub(super) fn counters(box_kind: BoxKind) -> String {
    let t = box_kind.table();
    format!(
        "SELECT tenant_id, status, count(*) AS n, min(last_modified_at) AS oldest, \
           sum(last_modified_at < ?1) AS stuck, sum(takeover_count > 0) AS taken_over \
         FROM {t} INDEXED BY {t}_live WHERE status IN ('PENDING', 'PROCESSING') \
         GROUP BY tenant_id, status \
         UNION ALL \
         SELECT tenant_id, status, count(*), NULL, 0, sum(takeover_count > 0) \
         FROM {t} INDEXED BY {t}_failed WHERE status = 'FAILED' GROUP BY tenant_id, status"
    )
}

/// The latest `completed_at` per tenant (a scan: no index covers completed rows).
pub(super) fn last_processed(box_kind: BoxKind) -> String {
    format!(
        "SELECT tenant_id, max(completed_at) AS last FROM {} WHERE status = 'COMPLETED' \
         GROUP BY tenant_id",
        box_kind.table()
    )
}

/// Decodes a row of [`list`] or [`show`].
pub(super) fn message_view(row: &SqliteRow, box_kind: BoxKind) -> Result<MessageView, StoreError> {
    let modified: String = row.try_get("last_modified_at").map_err(bad)?;
    let resubmitted: i64 = row.try_get("resubmitted_count").map_err(bad)?;
    Ok(MessageView {
        row: row_view(row, box_kind)?,
        last_modified_at: parse_time(&modified)?,
        received_at: opt_time(row, "received_at")?,
        resubmitted_count: u32::try_from(resubmitted)
            .map_err(|_| bad(format!("resubmitted_count out of range: {resubmitted}")))?,
        resubmitted_at: opt_time(row, "resubmitted_at")?,
        archived_at: opt_time(row, "archived_at")?,
        discarded_by: row.try_get("discarded_by").map_err(bad)?,
        discard_reason: row.try_get("discard_reason").map_err(bad)?,
    })
}

#[cfg(test)]
mod tests {
    use bandeja_core::Store;

    use super::*;
    use crate::SqliteStore;

    /// The plan of `sql` on `store`, one line per step.
    async fn plan(store: &SqliteStore, sql: &str) -> Vec<String> {
        sqlx::query(&format!("EXPLAIN QUERY PLAN {sql}"))
            .bind("2000-01-01T00:00:00.000Z")
            .fetch_all(store.pool())
            .await
            .expect("explain")
            .iter()
            .map(|row| row.get::<String, _>("detail"))
            .collect()
    }

    #[tokio::test]
    async fn an_archived_page_reads_the_seq_index_without_sorting() {
        let store = SqliteStore::connect("sqlite::memory:").await.expect("open");
        store.migrate().await.expect("migrate");
        for box_kind in BoxKind::ALL {
            let archive = bandeja_core::admin::archive_table(box_kind);
            let filter = MessageFilter {
                archived: true,
                box_kind: Some(box_kind),
                ..MessageFilter::default()
            };
            let next = Page {
                before_seq: Some(10),
                ..Page::default()
            };
            for page in [Page::default(), next] {
                let page = list(box_kind, &filter, page);
                let explain = Statement {
                    sql: format!("EXPLAIN QUERY PLAN {}", page.sql),
                    values: page.values,
                };
                let steps: Vec<String> = explain
                    .query()
                    .fetch_all(store.pool())
                    .await
                    .expect("explain")
                    .iter()
                    .map(|row| row.get::<String, _>("detail"))
                    .collect();
                assert!(
                    steps
                        .iter()
                        .any(|s| s.contains(&format!("USING INDEX {archive}_seq"))),
                    "{steps:?}"
                );
                assert!(
                    !steps.iter().any(|s| s.contains("TEMP B-TREE")),
                    "{steps:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn counters_read_only_the_live_and_failed_indexes() {
        let store = SqliteStore::connect("sqlite::memory:").await.expect("open");
        store.migrate().await.expect("migrate");
        for box_kind in BoxKind::ALL {
            let t = box_kind.table();
            let steps = plan(&store, &counters(box_kind)).await;
            let scans: Vec<&String> = steps.iter().filter(|s| s.contains(t)).collect();
            assert_eq!(
                scans,
                [
                    &format!("SCAN {t} USING INDEX {t}_live"),
                    &format!("SCAN {t} USING INDEX {t}_failed"),
                ],
                "{steps:?}"
            );
        }
    }
}
