//! The SQL that differs by completion mode (`delete`, `archive`) and the retention purge
//! (the staleness statement is in `staleness`). In `update` mode the statements of
//! `queries` are used unchanged.
//!
//! Inbox dedup under `delete`/`archive`: every inbox insert first records `(id,
//! subscriber)` in `<inbox>_dedup` (`ON CONFLICT DO NOTHING`); only pairs it recorded become
//! inbox rows. The primary key of the dedup table makes a concurrent redelivery wait for,
//! then see, the first one, so a row deleted on completion never lets its message in
//! again. Retention removes dedup records received before the window whose row is gone.

use bandeja_core::{BoxKind, CompletionMode};

use crate::queries::{HELD, NOW, OUTCOME_ARRAYS, OUTCOME_FIELDS};

/// The columns of a box that its archive table repeats (all but `archived_at`).
pub(crate) fn archive_columns(inbox: bool) -> String {
    let mut columns = crate::queries::COMMON_COLUMNS.to_vec();
    columns.extend(["last_modified_at", "resubmitted_count", "resubmitted_at"]);
    if inbox {
        columns.extend(["subscriber", "received_at", "delivery_count"]);
    }
    columns.join(", ")
}

/// `INSERT INTO <box>_archive … SELECT … FROM <source> g`: the rows of `source` as
/// COMPLETED now, unlocked, archived now. `None` unless `mode` is `archive`.
pub(crate) fn archive_cte(
    t: &str,
    inbox: bool,
    mode: CompletionMode,
    source: &str,
) -> Option<String> {
    if mode != CompletionMode::Archive {
        return None;
    }
    let columns = archive_columns(inbox);
    let selected = columns
        .split(", ")
        .map(|c| match c {
            "status" => "'COMPLETED'".to_owned(),
            "locked_by" => "NULL".to_owned(),
            "locked_until" => "NULL::timestamptz".to_owned(),
            "last_modified_at" | "completed_at" => NOW.to_owned(),
            other => format!("g.{other}"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!(
        "archived AS (INSERT INTO {t}_archive ({columns}, archived_at) \
           SELECT {selected}, {NOW} FROM {source} g)"
    ))
}

/// `resolve` in `delete`/`archive` mode: completed outcomes delete (and archive) their
/// rows, the others update them, in one statement; returns the number of rows changed.
/// `$1..$6` outcome arrays, `$7` worker. `attempts`: the CTEs recording failed attempts
/// (`attempts::ctes`), for batches holding a failure.
pub(crate) fn resolve(
    t: &str,
    inbox: bool,
    mode: CompletionMode,
    attempts: Option<&str>,
) -> String {
    let subscriber_join = if inbox {
        "AND t.subscriber = j.sub"
    } else {
        ""
    };
    let archived = archive_cte(t, inbox, mode, "gone")
        .map(|cte| format!(", {cte}"))
        .unwrap_or_default();
    let attempts = attempts.map(|ctes| format!("{ctes}, ")).unwrap_or_default();
    format!(
        "WITH j AS ( \
           SELECT * FROM UNNEST({OUTCOME_ARRAYS}) AS j({OUTCOME_FIELDS})), \
         {attempts}gone AS ( \
           DELETE FROM {t} AS t USING j \
           WHERE t.id = ANY($1::uuid[]) AND t.id = j.id {subscriber_join} AND j.status = 'COMPLETED' \
             AND {HELD} AND t.locked_by = $7::text \
           RETURNING t.*), \
         changed AS ( \
           UPDATE {t} AS t SET \
             status = j.status, \
             retry_count = COALESCE(j.retry_count, t.retry_count), \
             last_error = COALESCE(j.error, t.last_error), \
             next_attempt_at = CASE WHEN j.status = 'PENDING' \
               THEN {NOW} + j.delay * interval '1 second' ELSE t.next_attempt_at END, \
             locked_by = NULL, locked_until = NULL, last_modified_at = {NOW}, completed_at = NULL \
           FROM j \
           WHERE t.id = ANY($1::uuid[]) AND t.id = j.id {subscriber_join} AND j.status <> 'COMPLETED' \
             AND {HELD} AND t.locked_by = $7::text \
           RETURNING 1){archived} \
         SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM changed) AS n"
    )
}

/// The inbox insert with a dedup ledger (see the module documentation). Same parameters
/// and result as `queries::insert_inbox`; a pair the ledger already holds is not inserted
/// (its row, if still there, only gets its `delivery_count` raised) and is not returned.
pub(crate) fn insert_inbox(t: &str, channel: &str, name: &str) -> String {
    let (columns, selected, unnest) = crate::queries::inbox_insert_parts();
    format!(
        "WITH u AS (SELECT * FROM {unnest}), \
         led AS ( \
           INSERT INTO {t}_dedup AS d (id, subscriber, received_at) \
           SELECT u.id, u.subscriber, {NOW} FROM u ORDER BY u.ord \
           ON CONFLICT (id, subscriber) DO NOTHING \
           RETURNING d.id, d.subscriber), \
         ins AS ( \
           INSERT INTO {t} AS t (id, subscriber, {columns}, status, retry_count, next_attempt_at, \
             created_at, last_modified_at, received_at, delivery_count) \
           SELECT u.id, u.subscriber, {selected}, 'PENDING', 0, {NOW}, {NOW}, {NOW}, {NOW}, \
             u.deliveries \
           FROM u JOIN led ON led.id = u.id AND led.subscriber = u.subscriber ORDER BY u.ord \
           ON CONFLICT (id, subscriber) DO UPDATE \
             SET delivery_count = t.delivery_count + EXCLUDED.delivery_count \
           RETURNING t.id, t.subscriber, t.delivery_count), \
         bumped AS ( \
           UPDATE {t} AS t SET delivery_count = t.delivery_count + u.deliveries FROM u \
           WHERE t.id = u.id AND t.subscriber = u.subscriber \
             AND NOT EXISTS (SELECT 1 FROM led WHERE led.id = u.id AND led.subscriber = u.subscriber) \
           RETURNING t.id, t.subscriber, t.delivery_count), \
         woken AS ( \
           SELECT pg_notify('{channel}', '{name}') FROM (SELECT count(*) AS n FROM ins) AS x \
           WHERE x.n > 0) \
         SELECT r.id, r.subscriber, r.delivery_count \
         FROM (SELECT * FROM ins UNION ALL SELECT * FROM bumped) AS r LEFT JOIN woken ON true"
    )
}

/// Retention: `$1` age in seconds. Deletes up to 10 000 COMPLETED rows completed at least
/// that long ago and, for inboxes, dedup records received that long ago whose row is gone;
/// returns how many went.
pub(crate) fn purge(t: &str, inbox: bool) -> String {
    let cutoff = format!("{NOW} - $1::float8 * interval '1 second'");
    let ledger = if inbox {
        format!(
            ", led AS ( \
               DELETE FROM {t}_dedup AS d WHERE d.ctid = ANY(ARRAY( \
                 SELECT x.ctid FROM {t}_dedup x WHERE x.received_at <= {cutoff} \
                   AND NOT EXISTS (SELECT 1 FROM {t} b WHERE b.id = x.id AND b.subscriber = x.subscriber) \
                 LIMIT 10000)) \
               RETURNING 1)"
        )
    } else {
        String::new()
    };
    let counted = if inbox {
        " + (SELECT count(*) FROM led)"
    } else {
        ""
    };
    format!(
        "WITH gone AS ( \
           DELETE FROM {t} AS t WHERE t.ctid = ANY(ARRAY( \
             SELECT c.ctid FROM {t} c WHERE c.status = 'COMPLETED' AND c.completed_at <= {cutoff} \
             LIMIT 10000)) \
           RETURNING 1){ledger} \
         SELECT (SELECT count(*) FROM gone){counted} AS n"
    )
}

/// Every archived row of a box, by `seq`, with the columns `decode` reads.
pub(crate) fn archived_rows(t: &str, box_kind: BoxKind) -> String {
    let inbox = box_kind.is_inbox();
    format!(
        "SELECT {}, NULL::text AS taken_over_from FROM {t}_archive ORDER BY seq{}",
        crate::queries::column_list("", inbox),
        if inbox { ", subscriber" } else { "" }
    )
}
