//! The attempts history on PostgreSQL (`message_attempts`, migration 0009): the outcome
//! statement of a batch holding a failure carries three more CTEs that record one attempt
//! per failed outcome and delete the oldest attempts of those rows beyond
//! [`MAX_ATTEMPTS_KEPT`], so the history changes with the outcome, atomically. Batches
//! without a failure run the plain statement (`queries::BoxQueries::resolve`).

use bandeja_core::admin::{AttemptView, MAX_ATTEMPTS_KEPT};
use bandeja_core::store::Outcome;
use bandeja_core::{BoxKind, StoreError, StoreErrorKind};
use sqlx::postgres::PgRow;
use sqlx::Row;

use crate::queries::{HELD, NOW};

fn bad(what: impl Into<bandeja_core::BoxError>) -> StoreError {
    StoreError::new(StoreErrorKind::Permanent, "decode an attempt", what)
}

/// Whether `outcomes` hold a failed attempt (what [`ctes`] records).
pub(crate) fn any_failed(outcomes: &[Outcome]) -> bool {
    outcomes.iter().any(|o| o.resolution.is_failed_attempt())
}

/// The schema-qualified attempts table.
pub(crate) fn table(schema: &str) -> String {
    format!("\"{schema}\".message_attempts")
}

/// `logged` and `pruned` for the rows of CTE `failing` (`id`, `sub`, `retry_count`,
/// `status`, `error`): one attempt each, numbered `retry_count + 1` as the row stood
/// before the outcome, by worker `worker`; then, per row, the attempts beyond the latest
/// `MAX_ATTEMPTS_KEPT - 1` already stored (the statement's snapshot does not see the one
/// it adds) are deleted, an index range each (`message_attempts_row`).
pub(crate) fn log_and_prune(schema: &str, box_kind: BoxKind, worker: &str) -> String {
    let attempts = table(schema);
    let name = box_kind.table();
    let keep_before = MAX_ATTEMPTS_KEPT.saturating_sub(1);
    format!(
        "logged AS ( \
           INSERT INTO {attempts} (box, id, subscriber, attempt, outcome, error, at, worker) \
           SELECT '{name}', f.id, f.sub, f.retry_count + 1, \
             CASE f.status WHEN 'FAILED' THEN 'FAILED' ELSE 'RETRIED' END, f.error, {NOW}, {worker} \
           FROM failing f), \
         pruned AS ( \
           DELETE FROM {attempts} AS a USING ( \
             SELECT old.seq FROM failing f CROSS JOIN LATERAL ( \
               SELECT m.seq FROM {attempts} m \
               WHERE m.id = f.id AND m.box = '{name}' AND m.subscriber = f.sub \
               ORDER BY m.seq DESC OFFSET {keep_before}) AS old) AS o \
           WHERE a.seq = o.seq)"
    )
}

/// The attempts CTEs of an outcome statement, after its CTE `j` (the outcome arrays; `$1`
/// ids, `$7` worker): `failing` holds the rows with a failed outcome (scheduled again or
/// FAILED, with an error: a release has none) that the worker still holds.
///
/// `failing` reads the rows without locking them (the outcome `UPDATE` of the same
/// statement locks them; a `FOR UPDATE` here would skip the rows that `UPDATE` changes
/// first). A lease taken over while the statement runs may leave an attempt recorded
/// whose outcome the guard then refuses: the attempt did happen and fail.
pub(crate) fn ctes(schema: &str, t: &str, box_kind: BoxKind) -> String {
    let (subscriber, subscriber_join) = if box_kind.is_inbox() {
        ("t.subscriber", "AND t.subscriber = j.sub")
    } else {
        ("''::text", "")
    };
    format!(
        "failing AS ( \
           SELECT t.id, {subscriber} AS sub, t.retry_count, j.status, j.error \
           FROM {t} AS t JOIN j ON t.id = j.id {subscriber_join} \
           WHERE t.id = ANY($1::uuid[]) AND j.status IN ('PENDING', 'FAILED') \
             AND j.error IS NOT NULL AND {HELD} AND t.locked_by = $7::text), \
         {}",
        log_and_prune(schema, box_kind, "$7::text")
    )
}

/// `$1` id: every attempt of a message, oldest first.
pub(crate) fn of_message(schema: &str) -> String {
    format!(
        "SELECT box, subscriber, attempt, outcome, error, at, worker FROM {} \
         WHERE id = $1::uuid ORDER BY seq",
        table(schema)
    )
}

/// Deletes a batch (`$2` rows) of the box's attempts recorded before `horizon` (an SQL
/// expression of `$1`) whose row is neither in the box nor in its archive.
pub(crate) fn purge_orphans(schema: &str, box_kind: BoxKind, horizon: &str) -> String {
    let name = box_kind.table();
    let t = format!("\"{schema}\".{name}");
    let same_subscriber = |alias: &str| {
        if box_kind.is_inbox() {
            format!("AND {alias}.subscriber = x.subscriber")
        } else {
            String::new()
        }
    };
    format!(
        "DELETE FROM {attempts} AS a WHERE a.seq = ANY(ARRAY( \
           SELECT x.seq FROM {attempts} AS x WHERE x.at < {horizon} AND x.box = '{name}' \
             AND NOT EXISTS (SELECT 1 FROM {t} AS b WHERE b.id = x.id {live}) \
             AND NOT EXISTS (SELECT 1 FROM {t}_archive AS r WHERE r.id = x.id {archived}) \
           LIMIT $2::int8))",
        attempts = table(schema),
        live = same_subscriber("b"),
        archived = same_subscriber("r"),
    )
}

/// Decodes a row of [`of_message`].
pub(crate) fn view(row: &PgRow) -> Result<AttemptView, StoreError> {
    let table: String = row.try_get("box").map_err(bad)?;
    let outcome: String = row.try_get("outcome").map_err(bad)?;
    let attempt: i32 = row.try_get("attempt").map_err(bad)?;
    AttemptView::from_columns(
        &table,
        row.try_get("subscriber").map_err(bad)?,
        i64::from(attempt),
        &outcome,
        row.try_get("error").map_err(bad)?,
        row.try_get("at").map_err(bad)?,
        row.try_get("worker").map_err(bad)?,
    )
}
