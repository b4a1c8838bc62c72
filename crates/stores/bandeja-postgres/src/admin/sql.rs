//! The SQL of the `Admin` capability on PostgreSQL: column lists, the filter clauses (every
//! operator-typed value a bound `$n`), and the decoding of the operator columns.
//!
//! Index use: live rows through the live partial indexes, FAILED rows through `<box>_failed`,
//! completion times through the BRIN index `<box>_completed_brin` (migration 0004). No
//! statement here needs an index over all rows.

use bandeja_core::admin::{archive_table, MessageFilter, MessageView, Page};
use bandeja_core::{BoxKind, MessageStatus, StoreError, StoreErrorKind};
use chrono::{DateTime, DurationRound, Utc};
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::{Postgres, Row};
use uuid::Uuid;

use crate::completion::archive_columns;
use crate::decode::row_view;
use crate::queries::{column_list, NOW};

/// Rows per purge or archive batch: one short statement (and transaction) each.
pub(super) const BATCH: i64 = 1000;

/// Look-back windows for `last_processed_at`, in seconds, tried in turn: a recent window
/// reads only the BRIN block ranges of recent completions. `None`: the whole box.
pub(super) const WINDOWS: [Option<f64>; 4] =
    [Some(600.0), Some(86_400.0), Some(30.0 * 86_400.0), None];

/// A bound value.
pub(super) enum Value {
    Text(String),
    Uuid(Uuid),
    Time(DateTime<Utc>),
    Int(i64),
}

/// A statement and its values, bound in order as `$1`, `$2`...
pub(super) struct Statement {
    pub(super) sql: String,
    pub(super) values: Vec<Value>,
}

impl Statement {
    pub(super) fn query(&self) -> Query<'_, Postgres, PgArguments> {
        self.values
            .iter()
            .fold(sqlx::query(&self.sql), |q, v| match v {
                Value::Text(t) => q.bind(t.as_str()),
                Value::Uuid(u) => q.bind(*u),
                Value::Time(t) => q.bind(*t),
                Value::Int(i) => q.bind(*i),
            })
    }
}

/// Collects values and hands out their `$n` placeholders.
#[derive(Default)]
pub(super) struct Binder {
    pub(super) values: Vec<Value>,
}

impl Binder {
    pub(super) fn push(&mut self, value: Value, cast: &str) -> String {
        self.values.push(value);
        format!("${}::{cast}", self.values.len())
    }
}

fn bad(what: impl Into<bandeja_core::BoxError>) -> StoreError {
    StoreError::new(StoreErrorKind::Permanent, "decode a row", what)
}

/// The schema-qualified table of a box.
pub(super) fn table(schema: &str, box_kind: BoxKind) -> String {
    format!("\"{schema}\".{}", box_kind.table())
}

/// The columns `row_view` reads plus the operator columns, of a box or (`archived`) of
/// its archive table.
fn select_columns(box_kind: BoxKind, archived: bool) -> String {
    let inbox = box_kind.is_inbox();
    let received = if inbox {
        "received_at"
    } else {
        "NULL::timestamptz AS received_at"
    };
    let archive = if archived {
        "archived_at, discarded_by, discard_reason"
    } else {
        "NULL::timestamptz AS archived_at, NULL::text AS discarded_by, NULL::text AS discard_reason"
    };
    format!(
        "{}, {received}, last_modified_at, resubmitted_count, resubmitted_at, \
         NULL::text AS taken_over_from, {archive}",
        column_list("", inbox)
    )
}

/// The schema-qualified table a filter reads in a box: the box, or its archive table.
pub(super) fn source(schema: &str, box_kind: BoxKind, archived: bool) -> String {
    if archived {
        format!("\"{schema}\".{}", archive_table(box_kind))
    } else {
        table(schema, box_kind)
    }
}

/// `AND ...` for each filter field set (the status only when `with_status`). `completed`:
/// the rows sought are COMPLETED, so `since` also bounds `completed_at`.
pub(super) fn filter_clauses(
    filter: &MessageFilter,
    with_status: bool,
    completed: bool,
    binder: &mut Binder,
) -> String {
    let mut sql = String::new();
    if let Some(status) = filter.status.filter(|_| with_status) {
        // A closed enum, written as its constant text so the planner can match the partial
        // indexes in any plan; never user text.
        sql.push_str(&format!(" AND status = '{}'", status.as_str()));
    }
    let texts = [
        ("tenant_id", &filter.tenant),
        ("message_type", &filter.message_type),
        ("subscriber", &filter.subscriber),
    ];
    for (column, value) in texts {
        if let Some(value) = value {
            let p = binder.push(Value::Text(value.clone()), "text");
            sql.push_str(&format!(" AND {column} = {p}"));
        }
    }
    if let Some(id) = filter.id {
        let p = binder.push(Value::Uuid(id.0), "uuid");
        sql.push_str(&format!(" AND id = {p}"));
    }
    if let Some(correlation) = &filter.correlation_id {
        let p = binder.push(Value::Text(correlation.clone()), "text");
        sql.push_str(&format!(" AND headers->>'correlation_id' = {p}"));
    }
    if let Some(since) = filter.since {
        let p = binder.push(Value::Time(horizon(since)), "timestamptz");
        sql.push_str(&format!(" AND created_at >= {p}"));
        if completed {
            // Implied (a row completes after it is created); lets the BRIN index narrow
            // scans of COMPLETED rows (replay "since a date").
            sql.push_str(&format!(" AND completed_at >= {p}"));
        }
    }
    if let Some(until) = filter.until {
        let p = binder.push(Value::Time(horizon(until)), "timestamptz");
        sql.push_str(&format!(" AND created_at < {p}"));
    }
    if let Some(before) = filter.completed_before {
        let p = binder.push(Value::Time(horizon(before)), "timestamptz");
        sql.push_str(&format!(" AND completed_at < {p}"));
    }
    if let Some(before) = filter.archived_before {
        // Only the archive tables have the column: the callers refuse it otherwise
        // (`MessageFilter::check_read`). Rounded as `purge_archive` rounds its horizon.
        let p = binder.push(Value::Time(horizon(before)), "timestamptz");
        sql.push_str(&format!(" AND archived_at < {p}"));
    }
    sql
}

/// An instant a time column is compared with (a purge / archive horizon, a filter's
/// `since`, `until`, `completed_before`, `archived_before`), rounded *up* to the
/// microsecond PostgreSQL records, so that the recorded value is what is compared. sqlx
/// would truncate it, and a truncated horizon spares the rows completed in its own
/// microsecond.
pub(super) fn horizon(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_round_up(chrono::TimeDelta::microseconds(1))
        .unwrap_or(t)
}

/// How many rows of a box match `filter` (the clauses of [`list`], no page).
pub(super) fn count(schema: &str, box_kind: BoxKind, filter: &MessageFilter) -> Statement {
    let mut binder = Binder::default();
    let completed = filter.status == Some(MessageStatus::Completed);
    let clauses = filter_clauses(filter, true, completed, &mut binder);
    Statement {
        sql: format!(
            "SELECT count(*) AS n FROM {} WHERE true{clauses}",
            source(schema, box_kind, filter.archived)
        ),
        values: binder.values,
    }
}

/// One page of a box, newest first.
pub(super) fn list(
    schema: &str,
    box_kind: BoxKind,
    filter: &MessageFilter,
    page: Page,
) -> Statement {
    let mut binder = Binder::default();
    let completed = filter.status == Some(MessageStatus::Completed);
    let mut clauses = filter_clauses(filter, true, completed, &mut binder);
    if let Some(before) = page.before_seq {
        let p = binder.push(Value::Int(before), "int8");
        clauses.push_str(&format!(" AND seq < {p}"));
    }
    if let Some(after) = page.after_seq {
        let p = binder.push(Value::Int(after), "int8");
        clauses.push_str(&format!(" AND seq > {p}"));
    }
    let limit = binder.push(Value::Int(page.sql_limit()), "int8");
    let columns = select_columns(box_kind, filter.archived);
    let table = source(schema, box_kind, filter.archived);
    // After a `seq`: the rows closest above it, listed newest first like every page.
    let sql = match page.after_seq {
        None => format!(
            "SELECT {columns} FROM {table} WHERE true{clauses} ORDER BY seq DESC LIMIT {limit}"
        ),
        Some(_) => format!(
            "SELECT * FROM (SELECT {columns} FROM {table} WHERE true{clauses} \
             ORDER BY seq ASC LIMIT {limit}) AS page ORDER BY seq DESC"
        ),
    };
    Statement {
        sql,
        values: binder.values,
    }
}

/// The rows of message `$1` in a box (a primary-key lookup) or (`archived`) in its archive
/// (the `<box>_archive_id` index), by subscriber, then oldest archived first.
pub(super) fn show(schema: &str, box_kind: BoxKind, archived: bool) -> String {
    format!(
        "SELECT {} FROM {} WHERE id = $1::uuid ORDER BY {}{}seq",
        select_columns(box_kind, archived),
        source(schema, box_kind, archived),
        if box_kind.is_inbox() {
            "subscriber, "
        } else {
            ""
        },
        if archived { "archived_at, " } else { "" },
    )
}

/// Rows of `from_status` matching `filter` back to PENDING, due now, with fresh retry and
/// takeover budgets, the resubmission recorded; returns how many, and notifies `channel` (other processes' workers) when any.
pub(super) fn resubmit(
    schema: &str,
    channel: &str,
    box_kind: BoxKind,
    from_status: MessageStatus,
    filter: &MessageFilter,
) -> Statement {
    let mut binder = Binder::default();
    let clauses = filter_clauses(
        filter,
        false,
        from_status == MessageStatus::Completed,
        &mut binder,
    );
    let channel = binder.push(Value::Text(channel.to_owned()), "text");
    let payload = binder.push(Value::Text(box_kind.table().to_owned()), "text");
    Statement {
        sql: format!(
            "WITH changed AS ( \
               UPDATE {t} SET status = 'PENDING', retry_count = 0, takeover_count = 0, \
                 next_attempt_at = {NOW}, \
                 locked_by = NULL, locked_until = NULL, completed_at = NULL, \
                 last_modified_at = {NOW}, resubmitted_count = resubmitted_count + 1, \
                 resubmitted_at = {NOW} \
               WHERE status = '{from_status}'{clauses} RETURNING 1), \
             counted AS (SELECT count(*) AS n FROM changed), \
             notified AS (SELECT pg_notify({channel}, {payload}) FROM counted WHERE n > 0) \
             SELECT n, (SELECT count(*) FROM notified) AS notified FROM counted",
            t = table(schema, box_kind),
            from_status = from_status.as_str(),
        ),
        values: binder.values,
    }
}

/// The `ctid`s of the next batch of COMPLETED rows completed before `$1` (limit `$2`).
fn old_rows(t: &str) -> String {
    format!(
        "ctid = ANY(ARRAY(SELECT ctid FROM {t} WHERE status = 'COMPLETED' \
           AND completed_at < $1::timestamptz LIMIT $2::int8)) \
         AND status = 'COMPLETED' AND completed_at < $1::timestamptz"
    )
}

/// Deletes the next batch of old COMPLETED rows.
pub(super) fn purge(schema: &str, box_kind: BoxKind) -> String {
    let t = table(schema, box_kind);
    format!("DELETE FROM {t} WHERE {}", old_rows(&t))
}

/// Moves the next batch of old COMPLETED rows into the archive, in one statement.
pub(super) fn archive(schema: &str, box_kind: BoxKind) -> String {
    let t = table(schema, box_kind);
    let columns = archive_columns(box_kind.is_inbox());
    format!(
        "WITH moved AS (DELETE FROM {t} WHERE {old} RETURNING {columns}) \
         INSERT INTO \"{schema}\".{archive} ({columns}, archived_at) \
         SELECT {columns}, {NOW} FROM moved",
        old = old_rows(&t),
        archive = archive_table(box_kind),
    )
}

/// Moves the next batch of FAILED rows matching `filter` (through the FAILED index) into
/// the archive with who and why, in one statement; rows affected: how many moved.
pub(super) fn discard(
    schema: &str,
    box_kind: BoxKind,
    filter: &MessageFilter,
    discard: &bandeja_core::admin::Discard,
) -> Statement {
    let mut binder = Binder::default();
    let clauses = filter_clauses(filter, false, false, &mut binder);
    let batch = binder.push(Value::Int(BATCH), "int8");
    let by = binder.push(Value::Text(discard.by.clone()), "text");
    let reason = binder.push(Value::Text(discard.reason.clone()), "text");
    let t = table(schema, box_kind);
    let columns = archive_columns(box_kind.is_inbox());
    Statement {
        sql: format!(
            "WITH moved AS ( \
               DELETE FROM {t} WHERE ctid = ANY(ARRAY( \
                 SELECT ctid FROM {t} WHERE status = 'FAILED'{clauses} ORDER BY seq LIMIT {batch})) \
               AND status = 'FAILED' RETURNING {columns}) \
             INSERT INTO {archive} ({columns}, archived_at, discarded_by, discard_reason) \
             SELECT {columns}, {NOW}, {by}, {reason} FROM moved",
            archive = source(schema, box_kind, true),
        ),
        values: binder.values,
    }
}

/// `$1` horizon, `$2` batch size: deletes a batch of archived rows archived before it (the
/// archive's BRIN index on `archived_at`).
pub(super) fn purge_archive(schema: &str, box_kind: BoxKind) -> String {
    let archive = source(schema, box_kind, true);
    format!(
        "DELETE FROM {archive} WHERE ctid = ANY(ARRAY( \
           SELECT ctid FROM {archive} WHERE archived_at < $1::timestamptz LIMIT $2::int8))"
    )
}

/// Per tenant and status: count, oldest `last_modified_at`, rows last modified more than
/// `$1` seconds ago (stuck: an old row an operator just retried is not), rows taken over
/// at least once. Live rows through the live index, FAILED rows through the FAILED index:
/// the stuck and taken-over counts are filters on the rows these scans read anyway (no index
/// holds a time column, so `last_modified_at` costs what `created_at` did), so COMPLETED
/// rows are never visited.
pub(super) fn counters(schema: &str, box_kind: BoxKind) -> String {
    let t = table(schema, box_kind);
    format!(
        "SELECT tenant_id, status, count(*) AS n, min(last_modified_at) AS oldest, \
           count(*) FILTER (WHERE last_modified_at < {NOW} - $1::float8 * interval '1 second') AS stuck, \
           count(*) FILTER (WHERE takeover_count > 0) AS taken_over \
         FROM {t} WHERE status IN ('PENDING', 'PROCESSING') GROUP BY tenant_id, status \
         UNION ALL \
         SELECT tenant_id, status, count(*), NULL::timestamptz, 0::int8, \
           count(*) FILTER (WHERE takeover_count > 0) FROM {t} \
         WHERE status = 'FAILED' GROUP BY tenant_id, status"
    )
}

/// The latest `completed_at` per tenant among tenants `$1`, within the last `$2` seconds
/// (`windowed`) or ever.
pub(super) fn last_processed(schema: &str, box_kind: BoxKind, windowed: bool) -> String {
    let window = if windowed {
        format!("completed_at >= {NOW} - $2::float8 * interval '1 second'")
    } else {
        "completed_at IS NOT NULL".to_owned()
    };
    format!(
        "SELECT tenant_id, max(completed_at) AS last FROM {} \
         WHERE {window} AND tenant_id = ANY($1::text[]) GROUP BY tenant_id",
        table(schema, box_kind)
    )
}

/// The latest `completed_at` of the whole box, from the narrowest of the [`WINDOWS`] that
/// holds one, in one statement: `COALESCE` runs a wider window's subquery only when the
/// narrower ones found nothing.
pub(super) fn last_processed_box(schema: &str, box_kind: BoxKind) -> String {
    let t = table(schema, box_kind);
    let windows: Vec<String> = WINDOWS
        .iter()
        .map(|window| match window {
            Some(secs) => format!(
                "(SELECT max(completed_at) FROM {t} \
                 WHERE completed_at >= {NOW} - {secs}::float8 * interval '1 second')"
            ),
            None => format!("(SELECT max(completed_at) FROM {t})"),
        })
        .collect();
    format!("SELECT COALESCE({})", windows.join(", "))
}

/// Decodes a row of [`list`] or [`show`].
pub(super) fn message_view(row: &PgRow, box_kind: BoxKind) -> Result<MessageView, StoreError> {
    let resubmitted: i32 = row.try_get("resubmitted_count").map_err(bad)?;
    Ok(MessageView {
        row: row_view(row, box_kind)?,
        last_modified_at: row.try_get("last_modified_at").map_err(bad)?,
        received_at: row.try_get("received_at").map_err(bad)?,
        resubmitted_count: u32::try_from(resubmitted)
            .map_err(|_| bad(format!("resubmitted_count out of range: {resubmitted}")))?,
        resubmitted_at: row.try_get("resubmitted_at").map_err(bad)?,
        archived_at: row.try_get("archived_at").map_err(bad)?,
        discarded_by: row.try_get("discarded_by").map_err(bad)?,
        discard_reason: row.try_get("discard_reason").map_err(bad)?,
    })
}
