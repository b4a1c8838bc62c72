//! The in-process transport of events in one write transaction, without the rows leaving
//! SQLite: the due outbox rows (found as a claim finds them), one inbox row per
//! subscription registered for their type (dedup by `(id, subscriber)`, in `seq` order),
//! then the outbox rows marked COMPLETED — `BEGIN IMMEDIATE`, three statements, one
//! commit. A claim, a transfer and their three commits moved every payload through the
//! worker and back (decoded, encoded as JSON, parsed again by `json_extract`): about half of
//! a drain's database time.
//!
//! Only events whose outbox and inbox complete in the `update` mode relay here; commands
//! (whose unrouted rows are FAILED with an attempt recorded) and the `delete`/`archive`
//! modes (ledger, archive copies) keep the claim → transfer path, which does all of that.

use bandeja_core::config::CompletionMode;
use bandeja_core::store::{ClaimRequest, Published, RelayReport};
use bandeja_core::{MessageKind, StoreError};

use crate::queries::{MESSAGE_COLUMNS, NOW};
use crate::{sqlx_error, SqliteStore};

/// `?1`: the JSON array of the due rows' `seq`; `?2`: the subscriptions' kind. Returns the
/// `delivery_count` of every row written (1: inserted; more: an existing row delivered
/// again).
fn insert_routed(outbox: &str, inbox: &str) -> String {
    format!(
        "INSERT INTO {inbox} ({MESSAGE_COLUMNS}, subscriber, next_attempt_at, created_at, \
           last_modified_at, received_at) \
         SELECT m.id, COALESCE(m.target_tenant_id, m.tenant_id), m.message_type, \
           m.schema_version, m.partition_key, m.aggregate_type, m.aggregate_id, m.payload, m.headers, \
           m.source_tenant_id, m.target_tenant_id, m.target_service, m.occurred_at, r.subscriber, \
           {NOW}, {NOW}, {NOW}, {NOW} \
         FROM {outbox} m JOIN subscriptions r ON r.kind = ?2 AND r.message_type = m.message_type \
           AND (r.tenant_id = '' OR r.tenant_id = COALESCE(m.target_tenant_id, m.tenant_id)) \
         WHERE m.seq IN (SELECT value FROM json_each(?1)) \
         GROUP BY m.seq, r.subscriber \
         ORDER BY m.seq, r.subscriber \
         ON CONFLICT (id, subscriber) DO UPDATE SET delivery_count = delivery_count + 1 \
         RETURNING delivery_count"
    )
}

/// `?1`: the JSON array of the due rows' `seq`. Returns each row's seq, type and seconds
/// since its insert.
fn mark_relayed(outbox: &str) -> String {
    format!(
        "UPDATE {outbox} SET status = 'COMPLETED', locked_by = NULL, locked_until = NULL, \
           last_modified_at = {NOW}, completed_at = {NOW} \
         WHERE seq IN (SELECT value FROM json_each(?1)) \
         RETURNING seq, message_type, (julianday('now') - julianday(created_at)) * 86400.0"
    )
}

/// The statements of the relay of one event outbox (built once per store handle).
pub(crate) struct RelaySql {
    insert: String,
    mark: String,
}

impl RelaySql {
    pub(crate) fn events() -> Self {
        let outbox = bandeja_core::BoxKind::OutboxEvents.table();
        let inbox = bandeja_core::BoxKind::InboxEvents.table();
        RelaySql {
            insert: insert_routed(outbox, inbox),
            mark: mark_relayed(outbox),
        }
    }
}

/// Relays the due events of `request`; `None` where this path does not apply (see the
/// module documentation).
pub(crate) async fn relay(
    store: &SqliteStore,
    kind: MessageKind,
    request: &ClaimRequest<'_>,
) -> Result<Option<RelayReport>, StoreError> {
    let outbox = kind.outbox();
    if kind != MessageKind::Event
        || store.queries(outbox).mode != CompletionMode::Update
        || store.queries(kind.inbox()).mode != CompletionMode::Update
    {
        return Ok(None);
    }
    let sql = store.relay_sql();
    let mut tx = store
        .begin_immediate()
        .await
        .map_err(|e| sqlx_error("begin a relay", e))?;
    let due = crate::claim::due(store, &mut tx, outbox, request).await?;
    if due.is_empty() {
        return Ok(Some(RelayReport::default()));
    }
    let seqs = serde_json::to_string(&due.iter().map(|d| d.seq).collect::<Vec<_>>())
        .map_err(|e| StoreError::new(bandeja_core::StoreErrorKind::Permanent, "encode seqs", e))?;
    let counts: Vec<i64> = sqlx::query_scalar(&sql.insert)
        .bind(&seqs)
        .bind(bandeja_core::subscriptions::kind_name(kind))
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| sqlx_error("relay outbox rows into the inbox", e))?;
    let mut marked: Vec<(i64, String, f64)> = sqlx::query_as(&sql.mark)
        .bind(&seqs)
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| sqlx_error("mark relayed outbox rows", e))?;
    tx.commit()
        .await
        .map_err(|e| sqlx_error("commit a relay", e))?;
    marked.sort_unstable_by_key(|(seq, _, _)| *seq);
    let inserted = counts.iter().filter(|count| **count == 1).count() as u64;
    Ok(Some(RelayReport {
        moved: marked.len() as u64,
        inserted,
        duplicates: counts.len() as u64 - inserted,
        failed: 0,
        published: marked
            .into_iter()
            .map(|(_, message_type, waited)| Published {
                message_type,
                waited: std::time::Duration::try_from_secs_f64(waited).unwrap_or_default(),
            })
            .collect(),
    }))
}
