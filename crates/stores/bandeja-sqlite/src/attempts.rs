//! The attempts history on SQLite (`message_attempts`, migration 0007): each failed outcome
//! written by `resolve` records one attempt, in the same transaction, and the oldest
//! attempts of a row beyond [`MAX_ATTEMPTS_KEPT`] are deleted with it. Outcome batches
//! without a failure run none of this.

use bandeja_core::admin::{AttemptView, MAX_ATTEMPTS_KEPT};
use bandeja_core::store::Outcome;
use bandeja_core::{BoxKind, StoreError};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use crate::decode::{bad, parse_time};
use crate::queries::NOW;

/// Whether `outcomes` hold a failed attempt (what [`record`] records).
pub(crate) fn any_failed(outcomes: &[Outcome]) -> bool {
    outcomes.iter().any(|o| o.resolution.is_failed_attempt())
}

/// The failed outcomes of the JSON outcomes `?1` (see `store::outcomes_json`): scheduled
/// again or FAILED, with an error (a release has none).
const FAILED_OUTCOME: &str = "json_extract(j.value, '$.status') IN ('PENDING', 'FAILED') \
     AND json_extract(j.value, '$.error') IS NOT NULL";

/// `?1` JSON outcomes, `?2` worker: one attempt per failed outcome whose row the worker
/// still holds, numbered `retry_count + 1` as the row stands before the outcome. Runs
/// before the outcome `UPDATE`, in its transaction.
pub(crate) fn record(box_kind: BoxKind) -> String {
    let t = box_kind.table();
    let (subscriber, same_subscriber) = if box_kind.is_inbox() {
        (
            "b.subscriber",
            "AND b.subscriber = json_extract(j.value, '$.sub')",
        )
    } else {
        ("''", "")
    };
    format!(
        "INSERT INTO message_attempts (box, id, subscriber, attempt, outcome, error, at, worker) \
         SELECT '{t}', b.id, {subscriber}, b.retry_count + 1, \
           CASE json_extract(j.value, '$.status') WHEN 'FAILED' THEN 'FAILED' ELSE 'RETRIED' END, \
           json_extract(j.value, '$.error'), {NOW}, ?2 \
         FROM json_each(?1) AS j JOIN {t} AS b ON b.id = json_extract(j.value, '$.id') {same_subscriber} \
         WHERE {FAILED_OUTCOME} AND b.status = 'PROCESSING' AND b.locked_by = ?2 \
         ORDER BY j.key"
    )
}

/// `?1` JSON outcomes: deletes the attempts of their rows beyond the latest
/// [`MAX_ATTEMPTS_KEPT`] (an index range per row: `message_attempts_row`).
pub(crate) fn prune(box_kind: BoxKind) -> String {
    let t = box_kind.table();
    format!(
        "DELETE FROM message_attempts WHERE seq IN ( \
           SELECT seq FROM ( \
             SELECT a.seq, row_number() OVER (PARTITION BY a.id, a.subscriber ORDER BY a.seq DESC) AS n \
             FROM (SELECT DISTINCT json_extract(j.value, '$.id') AS id, \
                     COALESCE(json_extract(j.value, '$.sub'), '') AS sub \
                   FROM json_each(?1) AS j WHERE {FAILED_OUTCOME}) AS k \
             JOIN message_attempts AS a ON a.id = k.id AND a.box = '{t}' AND a.subscriber = k.sub) \
           WHERE n > {MAX_ATTEMPTS_KEPT})"
    )
}

/// `?1` id: every attempt of a message, oldest first.
pub(crate) const OF_MESSAGE: &str = "SELECT box, subscriber, attempt, outcome, error, at, worker \
     FROM message_attempts WHERE id = ?1 ORDER BY seq";

/// Deletes a batch (`?2` rows) of the box's attempts recorded before `horizon` (an SQL
/// expression of `?1`) whose row is neither in the box nor in its archive.
pub(crate) fn purge_orphans(box_kind: BoxKind, horizon: &str) -> String {
    let t = box_kind.table();
    let same_subscriber = |alias: &str| {
        if box_kind.is_inbox() {
            format!("AND {alias}.subscriber = a.subscriber")
        } else {
            String::new()
        }
    };
    format!(
        "DELETE FROM message_attempts WHERE seq IN ( \
           SELECT a.seq FROM message_attempts AS a WHERE a.at < {horizon} AND a.box = '{t}' \
             AND NOT EXISTS (SELECT 1 FROM {t} AS b WHERE b.id = a.id {live}) \
             AND NOT EXISTS (SELECT 1 FROM {t}_archive AS r WHERE r.id = a.id {archived}) \
           LIMIT ?2)",
        live = same_subscriber("b"),
        archived = same_subscriber("r"),
    )
}

/// Decodes a row of [`OF_MESSAGE`].
pub(crate) fn view(row: &SqliteRow) -> Result<AttemptView, StoreError> {
    let table: String = row.try_get("box").map_err(bad)?;
    let outcome: String = row.try_get("outcome").map_err(bad)?;
    let at: String = row.try_get("at").map_err(bad)?;
    AttemptView::from_columns(
        &table,
        row.try_get("subscriber").map_err(bad)?,
        row.try_get("attempt").map_err(bad)?,
        &outcome,
        row.try_get("error").map_err(bad)?,
        parse_time(&at)?,
        row.try_get("worker").map_err(bad)?,
    )
}
