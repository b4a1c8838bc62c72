//! The staleness monitor's statement ([`Store::fail_stale`]): it marks FAILED only rows
//! of a box that makes no progress, never a row that is only waiting.
//!
//! A row is stale when all of these hold (for inboxes, "the box" is the row's subscriber
//! in it):
//!
//! - it has been claimable for longer than its threshold: PENDING and due since more than
//!   `pending` ago, or PROCESSING with a lease that ran out more than `processing` ago and
//!   that nobody took over (a PROCESSING row whose lease is live — its holder renews it
//!   while it works — is never stale);
//! - it heads its partition key: no older PENDING or PROCESSING row of the same key (and
//!   tenant) exists, which it would be waiting for;
//! - the box made no progress within the threshold: no row completed (`completed_at`, or
//!   `archived_at` in the archive), none claimed or holding a live lease, none sent back
//!   or FAILED by a worker (`last_modified_at` with a `last_error` other than the
//!   monitor's own reasons).
//!
//! In `delete` mode completed rows leave no trace: progress is seen only through rows in
//! flight, retried or failed by a worker (see docs/operations.md).
//!
//! [`Store::fail_stale`]: bandeja_core::Store::fail_stale

use bandeja_core::CompletionMode;

use crate::queries::{KEY_CHECK_LIVE, NOW};

/// `$1` PENDING threshold and `$3` PROCESSING threshold in seconds, `$2`/`$4` their
/// reasons. Returns `(pending, processing)` counts of rows marked FAILED. One statement,
/// one snapshot; the `UPDATE`s check status and age again on the rows they change, so a
/// row a worker claimed or resolved meanwhile is left alone.
pub(crate) fn fail_stale(t: &str, inbox: bool, mode: CompletionMode) -> String {
    let pending_due =
        |a: &str| format!("{a}.next_attempt_at <= {NOW} - $1::float8 * interval '1 second'");
    let lease_gone = |a: &str| {
        format!(
            "COALESCE({a}.locked_until, {a}.last_modified_at) <= {NOW} - $3::float8 * interval '1 second'"
        )
    };
    let (scope, same_key_scope, in_scope, stale_scope) = if inbox {
        (
            "c.subscriber",
            "AND o.subscriber = c.subscriber",
            "AND x.subscriber = s.scope",
            "AND b.subscriber = st.scope",
        )
    } else {
        ("''::text", "", "", "")
    };
    // Whether the scope `s` moved since `cutoff`. One `EXISTS` per kind of evidence, each
    // with a plain cutoff, so the planner can use the BRIN index on `completed_at` and the
    // partial indexes on the live and FAILED rows.
    let moved = |cutoff: &str| {
        let archived = if mode == CompletionMode::Archive {
            format!(
                " OR EXISTS (SELECT 1 FROM {t}_archive x WHERE x.archived_at > {cutoff} {in_scope})"
            )
        } else {
            String::new()
        };
        format!(
            "EXISTS (SELECT 1 FROM {t} x WHERE x.completed_at > {cutoff} {in_scope}) \
             OR EXISTS (SELECT 1 FROM {t} x WHERE x.status = 'PROCESSING' \
                  AND (x.locked_until > {NOW} OR x.last_modified_at > {cutoff}) {in_scope}) \
             OR EXISTS (SELECT 1 FROM {t} x WHERE x.status = 'PENDING' {worker_touched}) \
             OR EXISTS (SELECT 1 FROM {t} x WHERE x.status = 'FAILED' {worker_touched}){archived}",
            worker_touched = format!(
                "AND x.last_modified_at > {cutoff} AND x.last_error IS NOT NULL \
                 AND x.last_error <> $2::text AND x.last_error <> $4::text {in_scope}"
            ),
        )
    };
    let failed = format!(
        "status = 'FAILED', locked_by = NULL, locked_until = NULL, last_modified_at = {NOW}, \
         completed_at = NULL"
    );
    let update = |status: &str, reason: &str, age: String| {
        format!(
            "UPDATE {t} AS b SET {failed}, last_error = {reason}::text FROM st \
             WHERE b.id = st.id {stale_scope} AND st.status = '{status}' \
               AND b.status = '{status}' AND {age} \
             RETURNING 1"
        )
    };
    format!(
        "WITH c AS ( \
           SELECT c.id, {scope} AS scope, c.status FROM {t} c \
           WHERE c.status IN ('PENDING', 'PROCESSING') \
             AND ((c.status = 'PENDING' AND {c_due}) OR (c.status = 'PROCESSING' AND {c_gone})) \
             AND (c.partition_key IS NULL OR NOT EXISTS ( \
                  SELECT 1 FROM {t} o WHERE o.partition_key = c.partition_key \
                  AND o.tenant_id = c.tenant_id {same_key_scope} \
                  AND o.seq < c.seq AND {KEY_CHECK_LIVE}))), \
         s AS (SELECT DISTINCT status, scope FROM c), \
         moving AS ( \
           SELECT s.status, s.scope FROM s WHERE s.status = 'PENDING' AND ({p_moved}) \
           UNION ALL \
           SELECT s.status, s.scope FROM s WHERE s.status = 'PROCESSING' AND ({q_moved})), \
         st AS ( \
           SELECT c.id, c.scope, c.status FROM c \
           WHERE NOT EXISTS (SELECT 1 FROM moving m WHERE m.status = c.status AND m.scope = c.scope)), \
         p AS ({p}), \
         q AS ({q}) \
         SELECT (SELECT count(*) FROM p) AS pending, (SELECT count(*) FROM q) AS processing",
        c_due = pending_due("c"),
        c_gone = lease_gone("c"),
        p_moved = moved(&format!("{NOW} - $1::float8 * interval '1 second'")),
        q_moved = moved(&format!("{NOW} - $3::float8 * interval '1 second'")),
        p = update("PENDING", "$2", pending_due("b")),
        q = update("PROCESSING", "$4", lease_gone("b")),
    )
}
