//! The SQL of one box, written once per table when the store is created.

use bandeja_core::BoxKind;

/// SQLite's clock as fixed-width UTC text (millisecond precision).
pub(crate) const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// The columns every box shares, in the order `decode` reads them.
pub(crate) const COMMON_COLUMNS: &str = "seq, id, tenant_id, message_type, schema_version, partition_key, \
     aggregate_type, aggregate_id, payload, headers, source_tenant_id, target_tenant_id, target_service, \
     status, retry_count, next_attempt_at, last_error, locked_by, locked_until, occurred_at, created_at, \
     completed_at";

/// The statements of one box.
pub(crate) struct BoxQueries {
    pub(crate) select_due: String,
    pub(crate) claim: String,
    pub(crate) resolve: String,
    pub(crate) complete: String,
    pub(crate) rows: String,
}

impl BoxQueries {
    pub(crate) fn new(box_kind: BoxKind) -> Self {
        let t = box_kind.table();
        let inbox = box_kind.is_inbox();
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
            // ?1 = ordered (0/1), ?2 = limit
            select_due: format!(
                "SELECT c.seq, c.status FROM {t} c \
                 WHERE c.status IN ('PENDING', 'PROCESSING') \
                   AND ((c.status = 'PENDING' AND c.next_attempt_at <= {NOW}) \
                     OR (c.status = 'PROCESSING' AND c.locked_until < {NOW})) \
                   AND (?1 = 0 OR c.partition_key IS NULL OR NOT EXISTS ( \
                        SELECT 1 FROM {t} o WHERE o.partition_key = c.partition_key {same_subscriber} \
                        AND o.seq < c.seq AND o.status IN ('PENDING', 'PROCESSING'))) \
                 ORDER BY c.seq LIMIT ?2"
            ),
            // ?1 = worker, ?2 = lease modifier ('+30.000 seconds'), ?3 = JSON array of seqs
            claim: format!(
                "UPDATE {t} SET \
                   retry_count = retry_count + (status = 'PROCESSING'), \
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
        }
    }
}

/// Inserts into an outbox: 16 parameters per row, `rows` rows.
pub(crate) fn insert_outbox(table: &str, rows: usize) -> String {
    let mut sql = format!(
        "INSERT INTO {table} (id, tenant_id, message_type, schema_version, partition_key, aggregate_type, \
         aggregate_id, payload, headers, source_tenant_id, target_tenant_id, target_service, occurred_at, \
         next_attempt_at, created_at, last_modified_at) VALUES "
    );
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        let b = row * 13;
        sql.push('(');
        for col in 1..=13 {
            sql.push_str(&format!("?{}, ", b + col));
        }
        sql.push_str(&format!("{NOW}, {NOW}, {NOW})"));
    }
    sql
}

/// Inserts into an inbox with dedup: 14 parameters per row.
pub(crate) fn insert_inbox(table: &str, rows: usize) -> String {
    let mut sql = format!(
        "INSERT INTO {table} (id, subscriber, tenant_id, message_type, schema_version, partition_key, \
         aggregate_type, aggregate_id, payload, headers, source_tenant_id, target_tenant_id, target_service, \
         occurred_at, next_attempt_at, created_at, last_modified_at, received_at) VALUES "
    );
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        let b = row * 14;
        sql.push('(');
        for col in 1..=14 {
            sql.push_str(&format!("?{}, ", b + col));
        }
        sql.push_str(&format!("{NOW}, {NOW}, {NOW}, {NOW})"));
    }
    sql.push_str(
        " ON CONFLICT (id, subscriber) DO UPDATE SET delivery_count = delivery_count + 1 RETURNING delivery_count",
    );
    sql
}
