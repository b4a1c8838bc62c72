//! The staleness monitor's statements ([`Store::fail_stale`]): they mark FAILED only rows
//! of a box that makes no progress, never a row that is only waiting. The rule is the
//! PostgreSQL store's (see its `staleness` module and docs/operations.md): a row is stale
//! when it has been claimable for longer than its threshold (PENDING and due that long;
//! PROCESSING with a lease that ran out that long ago), heads its partition key, and its
//! box (for inboxes: its subscriber's rows) completed, claimed, renewed, retried or failed
//! nothing within the threshold — the monitor's own FAILs do not count.
//!
//! [`Store::fail_stale`]: bandeja_core::Store::fail_stale

use bandeja_core::CompletionMode;

use crate::queries::NOW;

/// `?1` modifier (`-3600.000 seconds`), `?2` reason, `?3` the other statement's reason
/// (both run in one transaction: the first one's FAILs are not progress for the second).
/// `processing` picks the statement for PROCESSING rows over PENDING ones.
pub(crate) fn fail_stale(t: &str, inbox: bool, mode: CompletionMode, processing: bool) -> String {
    let cutoff = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1)";
    let (status, since) = if processing {
        ("PROCESSING", "COALESCE(locked_until, last_modified_at)")
    } else {
        ("PENDING", "next_attempt_at")
    };
    let moving = format!(
        "x.completed_at > {cutoff} \
         OR (x.status = 'PROCESSING' AND (x.locked_until > {NOW} OR x.last_modified_at > {cutoff})) \
         OR (x.status IN ('PENDING', 'FAILED') AND x.last_modified_at > {cutoff} \
             AND x.last_error IS NOT NULL AND x.last_error NOT IN (?2, ?3))"
    );
    let archive = mode == CompletionMode::Archive;
    let (same_key_scope, still) = if inbox {
        let archived = if archive {
            format!(" UNION SELECT a.subscriber FROM {t}_archive a WHERE a.archived_at > {cutoff}")
        } else {
            String::new()
        };
        (
            format!("AND o.subscriber = {t}.subscriber"),
            format!(
                "{t}.subscriber NOT IN (SELECT x.subscriber FROM {t} x WHERE {moving}{archived})"
            ),
        )
    } else {
        let archived = if archive {
            format!(" AND NOT EXISTS (SELECT 1 FROM {t}_archive a WHERE a.archived_at > {cutoff})")
        } else {
            String::new()
        };
        (
            String::new(),
            format!("NOT EXISTS (SELECT 1 FROM {t} x WHERE {moving}){archived}"),
        )
    };
    format!(
        "UPDATE {t} SET status = 'FAILED', last_error = ?2, locked_by = NULL, locked_until = NULL, \
           last_modified_at = {NOW}, completed_at = NULL \
         WHERE status = '{status}' AND {since} <= {cutoff} \
           AND (partition_key IS NULL OR NOT EXISTS ( \
                SELECT 1 FROM {t} o WHERE o.partition_key = {t}.partition_key \
                AND o.tenant_id = {t}.tenant_id {same_key_scope} \
                AND o.seq < {t}.seq AND o.status IN ('PENDING', 'PROCESSING'))) \
           AND {still}"
    )
}
