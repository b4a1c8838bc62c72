//! The SQL of one box, written once per table when the store is created.

use bandeja_core::config::CompletionModes;
use bandeja_core::{BoxKind, CompletionMode};

use crate::completion::{self, CompletionSql};

/// SQLite's clock as fixed-width UTC text (millisecond precision).
pub(crate) const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// The columns every box shares, in the order `decode` reads them.
pub(crate) const COMMON_COLUMNS: &str = "seq, id, tenant_id, message_type, schema_version, partition_key, \
     aggregate_type, aggregate_id, payload, headers, source_tenant_id, target_tenant_id, target_service, \
     status, retry_count, next_attempt_at, last_error, locked_by, locked_until, occurred_at, created_at, \
     completed_at, takeover_count";

/// The statements of one box.
pub(crate) struct BoxQueries {
    pub(crate) select_due: String,
    pub(crate) select_due_tenant: String,
    pub(crate) tenants: String,
    pub(crate) floor: String,
    pub(crate) claim: String,
    /// `?1` worker, `?2` lease modifier: every row the worker still holds gets a new lease;
    /// returns `(id, subscriber)` of each.
    pub(crate) renew: String,
    pub(crate) resolve: String,
    pub(crate) complete: String,
    pub(crate) rows: String,
    /// What completing a row of this box does, and the statements it adds to `resolve`.
    pub(crate) mode: CompletionMode,
    pub(crate) completion: CompletionSql,
    /// Inboxes: the insert with dedup (and, with a ledger, the statement recording it).
    pub(crate) insert_inbox: String,
    pub(crate) record_in_ledger: Option<String>,
    /// Retention (`?1` modifier): COMPLETED rows, and the ledger of an inbox.
    pub(crate) purge: String,
    pub(crate) purge_ledger: Option<String>,
    /// Staleness (`?1` modifier, `?2` reason, `?3` the other reason): PENDING rows,
    /// PROCESSING rows.
    pub(crate) stale_pending: String,
    pub(crate) stale_processing: String,
    /// Every row of `<box>_archive`.
    pub(crate) archived: String,
    /// The attempts history (`?1` JSON outcomes, `?2` worker), run only for outcome
    /// batches holding a failure: records them, then keeps the latest of each row.
    pub(crate) record_attempts: String,
    pub(crate) prune_attempts: String,
}

impl BoxQueries {
    pub(crate) fn new(box_kind: BoxKind, modes: CompletionModes) -> Self {
        let t = box_kind.table();
        let inbox = box_kind.is_inbox();
        let mode = modes.of(box_kind);
        let ledger = inbox && mode != CompletionMode::Update;
        let columns = if inbox {
            format!("{COMMON_COLUMNS}, subscriber, delivery_count")
        } else {
            format!("{COMMON_COLUMNS}, NULL AS subscriber, 1 AS delivery_count")
        };
        let same_subscriber = if inbox {
            "AND o.subscriber = c.subscriber"
        } else {
            ""
        };
        let subscriber_match = if inbox {
            format!("AND {t}.subscriber = j.sub")
        } else {
            String::new()
        };
        BoxQueries {
            select_due: select_due(t, same_subscriber, false, inbox),
            select_due_tenant: select_due(t, same_subscriber, true, inbox),
            tenants: format!(
                "SELECT DISTINCT tenant_id FROM {t} WHERE status = 'PENDING' LIMIT 10000"
            ),
            floor: format!("SELECT min(seq) FROM {t} WHERE status IN ('PENDING', 'PROCESSING')"),
            renew: format!(
                "UPDATE {t} SET locked_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?2) \
                 WHERE status = 'PROCESSING' AND locked_by = ?1 RETURNING id, {}",
                if inbox { "subscriber" } else { "NULL AS subscriber" }
            ),
            // ?1 = worker, ?2 = lease modifier ('+30.000 seconds'), ?3 = JSON array of seqs
            claim: format!(
                "UPDATE {t} SET \
                   takeover_count = takeover_count + (status = 'PROCESSING'), \
                   last_error = CASE WHEN status = 'PROCESSING' \
                     THEN 'lease of ' || COALESCE(locked_by, '?') || ' expired at ' || COALESCE(locked_until, '?') \
                          || ' before it finished; taken over' ELSE last_error END, \
                   status = 'PROCESSING', locked_by = ?1, \
                   locked_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?2), last_modified_at = {NOW} \
                 WHERE seq IN (SELECT value FROM json_each(?3)) \
                 RETURNING {columns}"
            ),
            // ?1 = JSON outcomes, ?2 = worker
            resolve: format!(
                "UPDATE {t} SET \
                   status = j.status, \
                   retry_count = COALESCE(j.retry_count, {t}.retry_count), \
                   last_error = COALESCE(j.error, {t}.last_error), \
                   next_attempt_at = CASE WHEN j.status = 'PENDING' \
                     THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || j.delay || ' seconds') \
                     ELSE {t}.next_attempt_at END, \
                   locked_by = NULL, locked_until = NULL, last_modified_at = {NOW}, \
                   completed_at = CASE WHEN j.status = 'COMPLETED' THEN {NOW} ELSE NULL END \
                 FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.sub') AS sub, \
                         json_extract(value, '$.status') AS status, json_extract(value, '$.retry_count') AS retry_count, \
                         json_extract(value, '$.delay') AS delay, json_extract(value, '$.error') AS error \
                       FROM json_each(?1)) AS j \
                 WHERE {t}.id = j.id {subscriber_match} AND {t}.status = 'PROCESSING' AND {t}.locked_by = ?2"
            ),
            // ?1 = id, ?2 = worker, ?3 = subscriber
            complete: format!(
                "UPDATE {t} SET status = 'COMPLETED', locked_by = NULL, locked_until = NULL, \
                   last_modified_at = {NOW}, completed_at = {NOW} \
                 WHERE id = ?1 AND status = 'PROCESSING' AND locked_by = ?2 {}",
                if inbox { "AND subscriber = ?3" } else { "AND ?3 IS NULL" }
            ),
            rows: format!(
                "SELECT {columns} FROM {t} ORDER BY seq{}",
                if inbox { ", subscriber" } else { "" }
            ),
            mode,
            completion: CompletionSql::new(box_kind, mode),
            insert_inbox: insert_inbox(t, ledger),
            record_in_ledger: ledger.then(|| completion::record_in_ledger(t)),
            purge: completion::purge(t),
            purge_ledger: inbox.then(|| completion::purge_ledger(t)),
            stale_pending: crate::staleness::fail_stale(t, inbox, mode, false),
            stale_processing: crate::staleness::fail_stale(t, inbox, mode, true),
            archived: completion::archived_rows(box_kind),
            record_attempts: crate::attempts::record(box_kind),
            prune_attempts: crate::attempts::prune(box_kind),
        }
    }
}

/// The message columns of a JSON batch element (`?1` is a JSON array of objects built by
/// `store::rows_json`). One parameter per statement: SQLite binds by looking parameter names
/// up one by one, so thousands of `?NNN` per statement cost quadratic time.
const FROM_JSON: &str = "json_extract(value, '$.id'), json_extract(value, '$.tenant_id'), \
     json_extract(value, '$.message_type'), json_extract(value, '$.schema_version'), \
     json_extract(value, '$.partition_key'), json_extract(value, '$.aggregate_type'), \
     json_extract(value, '$.aggregate_id'), json_extract(value, '$.payload'), \
     json_extract(value, '$.headers'), json_extract(value, '$.source_tenant_id'), \
     json_extract(value, '$.target_tenant_id'), json_extract(value, '$.target_service'), \
     json_extract(value, '$.occurred_at')";

/// The message columns of every box, in the order the inserts bind them.
pub(crate) const MESSAGE_COLUMNS: &str = "id, tenant_id, message_type, schema_version, partition_key, aggregate_type, \
     aggregate_id, payload, headers, source_tenant_id, target_tenant_id, target_service, occurred_at";

/// Inserts a JSON array of messages (`?1`) into an outbox, in array order.
pub(crate) fn insert_outbox(table: &str) -> String {
    format!(
        "INSERT INTO {table} ({MESSAGE_COLUMNS}, next_attempt_at, created_at, last_modified_at) \
         SELECT {FROM_JSON}, {NOW}, {NOW}, {NOW} FROM json_each(?1) ORDER BY key"
    )
}

/// Inserts a JSON array of messages with their subscriber (`?1`) into an inbox, with dedup:
/// an existing `(id, subscriber)` only counts one more delivery. Returns `delivery_count`
/// per row (1: inserted). With a `ledger`, pairs it holds whose row is gone are skipped
/// (and return nothing).
fn insert_inbox(table: &str, ledger: bool) -> String {
    let absorbed = if ledger {
        completion::absorbed_by_ledger(table)
    } else {
        String::new()
    };
    format!(
        "INSERT INTO {table} ({MESSAGE_COLUMNS}, subscriber, next_attempt_at, created_at, last_modified_at, \
         received_at) \
         SELECT {FROM_JSON}, json_extract(value, '$.subscriber'), {NOW}, {NOW}, {NOW}, {NOW} \
         FROM json_each(?1) WHERE true {absorbed} ORDER BY key \
         ON CONFLICT (id, subscriber) DO UPDATE SET delivery_count = delivery_count + 1 \
         RETURNING delivery_count"
    )
}

/// The due rows of a claim, in `seq` order: `?1` ordered (0/1), `?2` limit, `?3` floor
/// seq; with `by_tenant`, only PENDING rows of tenant `?4`; in an inbox, the next parameter is a JSON array of the `[subscriber, type,
/// tenant]` triples whose rows may be claimed (a null type or tenant matches any; NULL: any
/// row).
fn select_due(t: &str, same_subscriber: &str, by_tenant: bool, inbox: bool) -> String {
    let tenant_filter = if by_tenant {
        "AND c.tenant_id = ?4 AND c.status = 'PENDING'"
    } else {
        ""
    };
    let subscribers = if inbox {
        let n = if by_tenant { 5 } else { 4 };
        format!(
            "AND (?{n} IS NULL OR EXISTS (SELECT 1 FROM json_each(?{n}) k \
               WHERE json_extract(k.value, '$[0]') = c.subscriber \
                 AND (json_extract(k.value, '$[1]') IS NULL \
                   OR json_extract(k.value, '$[1]') = c.message_type) \
                 AND (json_extract(k.value, '$[2]') IS NULL \
                   OR json_extract(k.value, '$[2]') = c.tenant_id)))"
        )
    } else {
        String::new()
    };
    format!(
        "SELECT c.seq, c.status, c.locked_by FROM {t} c \
         WHERE c.status IN ('PENDING', 'PROCESSING') AND c.seq >= COALESCE(?3, 0) {tenant_filter} {subscribers} \
           AND ((c.status = 'PENDING' AND c.next_attempt_at <= {NOW}) \
             OR (c.status = 'PROCESSING' AND c.locked_until < {NOW})) \
           AND (?1 = 0 OR c.partition_key IS NULL OR NOT EXISTS ( \
                SELECT 1 FROM {t} o WHERE o.partition_key = c.partition_key \
                AND o.tenant_id = c.tenant_id {same_subscriber} \
                AND o.seq < c.seq AND o.status IN ('PENDING', 'PROCESSING'))) \
         ORDER BY c.seq LIMIT ?2"
    )
}
