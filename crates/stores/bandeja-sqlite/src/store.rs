//! `Store` and `Inspect` for SQLite. The SQL lives in `queries` (and, for what depends on
//! the completion mode, `completion`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bandeja_core::config::{CompletionMode, CompletionModes};
use bandeja_core::store::{
    ClaimRequest, Delivery, Inspect, Outcome, ReceiveReport, Resolution, Route, RowView,
    SavepointStep,
};
use bandeja_core::store::{StaleReport, StaleRequest};
use bandeja_core::subscriptions::Registration;
use bandeja_core::wake::Wakers;
use bandeja_core::{
    BoxKind, MessageId, MessageKind, MessageRecord, Store, StoreError, StoredMessage, TenantId,
};
use sqlx::sqlite::{Sqlite, SqliteConnection};
use sqlx::Transaction;

use crate::decode::{format_time, row_key, row_view};
use crate::queries::{insert_outbox, NOW};
use crate::{sqlx_error, SqliteStore, MIGRATOR};

fn encode_err(e: serde_json::Error) -> StoreError {
    StoreError::new(bandeja_core::StoreErrorKind::Permanent, "encode a batch", e)
}

/// The JSON element of one message row (what `queries::FROM_JSON` reads).
fn row_json(
    record: &MessageRecord,
    subscriber: Option<&str>,
) -> Result<serde_json::Value, StoreError> {
    let tenant = if subscriber.is_some() {
        record.inbox_tenant()
    } else {
        &record.tenant_id
    };
    Ok(serde_json::json!({
        "id": record.id.to_string(),
        "subscriber": subscriber,
        "tenant_id": tenant.as_str(),
        "message_type": record.message_type,
        "schema_version": record.schema_version,
        "partition_key": record.partition_key,
        "aggregate_type": record.aggregate_type,
        "aggregate_id": record.aggregate_id,
        "payload": record.payload,
        "headers": serde_json::to_string(&record.headers).map_err(encode_err)?,
        "source_tenant_id": record.source_tenant_id.as_ref().map(|t| t.as_str()),
        "target_tenant_id": record.target_tenant_id.as_ref().map(|t| t.as_str()),
        "target_service": record.target_service,
        "occurred_at": format_time(record.occurred_at),
    }))
}

async fn insert_inbox_rows(
    store: &SqliteStore,
    conn: &mut SqliteConnection,
    kind: MessageKind,
    deliveries: &[Delivery<'_>],
) -> Result<ReceiveReport, StoreError> {
    let rows = deliveries
        .iter()
        .flat_map(|d| {
            d.subscribers
                .iter()
                .map(move |s| row_json(d.record, Some(s)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut report = ReceiveReport::default();
    if rows.is_empty() {
        return Ok(report);
    }
    let total = rows.len() as u64;
    let rows = serde_json::Value::Array(rows).to_string();
    let queries = store.queries(kind.inbox());
    let counts = sqlx::query_scalar::<_, i64>(&queries.insert_inbox)
        .bind(&rows)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| sqlx_error("insert into the inbox", e))?;
    if let Some(record) = &queries.record_in_ledger {
        sqlx::query(record)
            .bind(&rows)
            .execute(&mut *conn)
            .await
            .map_err(|e| sqlx_error("record inbox dedup", e))?;
    }
    // Rows not returned were absorbed by the dedup ledger: duplicates too.
    report.inserted = counts.iter().filter(|count| **count == 1).count() as u64;
    report.duplicates = total - report.inserted;
    Ok(report)
}

fn outcomes_json(outcomes: &[Outcome]) -> String {
    let items: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| {
            let (status, retry_count, delay, error) = match &o.resolution {
                Resolution::Completed => ("COMPLETED", None, 0.0, None),
                Resolution::Retry {
                    retry_count,
                    delay,
                    error,
                } => (
                    "PENDING",
                    Some(*retry_count),
                    delay.as_secs_f64(),
                    Some(error.as_str()),
                ),
                Resolution::Failed { retry_count, error } => {
                    ("FAILED", Some(*retry_count), 0.0, Some(error.as_str()))
                }
                Resolution::Release => ("PENDING", None, 0.0, None),
            };
            serde_json::json!({
                "id": o.id.to_string(), "sub": o.subscriber, "status": status,
                "retry_count": retry_count, "delay": format!("{delay:.3}"), "error": error,
            })
        })
        .collect();
    serde_json::Value::Array(items).to_string()
}

async fn resolve_on(
    store: &SqliteStore,
    conn: &mut SqliteConnection,
    box_kind: BoxKind,
    worker_id: &str,
    outcomes: &[Outcome],
) -> Result<u64, StoreError> {
    if outcomes.is_empty() {
        return Ok(0);
    }
    let queries = store.queries(box_kind);
    let json = outcomes_json(outcomes);
    // Failed attempts are recorded first, while their rows are still PROCESSING and held
    // (the caller's transaction makes it one change with the outcomes).
    let failed = crate::attempts::any_failed(outcomes);
    if failed {
        sqlx::query(&queries.record_attempts)
            .bind(&json)
            .bind(worker_id)
            .execute(&mut *conn)
            .await
            .map_err(|e| sqlx_error("record failed attempts", e))?;
    }
    let done = sqlx::query(&queries.resolve)
        .bind(&json)
        .bind(worker_id)
        .execute(&mut *conn)
        .await
        .map_err(|e| sqlx_error("write outcomes", e))?;
    if failed {
        sqlx::query(&queries.prune_attempts)
            .bind(&json)
            .execute(&mut *conn)
            .await
            .map_err(|e| sqlx_error("prune the attempts history", e))?;
    }
    // `archive`/`delete`: the rows just completed move out, in the caller's transaction.
    for sql in [&queries.completion.archive, &queries.completion.delete]
        .into_iter()
        .flatten()
    {
        sqlx::query(sql)
            .bind(&json)
            .execute(&mut *conn)
            .await
            .map_err(|e| sqlx_error("move completed rows out", e))?;
    }
    Ok(done.rows_affected())
}

/// A `strftime` modifier `duration` in the past: `-3600.000 seconds`.
/// SQLite's time modifier of a lease from now (`+20.000 seconds`).
fn lease_modifier(lease: std::time::Duration) -> String {
    format!("+{:.3} seconds", lease.as_secs_f64())
}

fn ago(duration: std::time::Duration) -> String {
    format!("-{:.3} seconds", duration.as_secs_f64())
}

/// How many orphaned attempts one statement of the retention deletes.
const ORPHANS_BATCH: i64 = 10_000;

#[async_trait]
impl Store for SqliteStore {
    type Conn = SqliteConnection;
    type Tx = Transaction<'static, Sqlite>;

    async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR
            .run(self.pool())
            .await
            .map_err(|e| sqlx_error("run the migrations", e.into()))
    }

    async fn begin(&self) -> Result<Self::Tx, StoreError> {
        crate::busy::give_way().await;
        self.workers()
            .begin()
            .await
            .map_err(|e| sqlx_error("begin a transaction", e))
    }

    async fn commit(&self, tx: Self::Tx) -> Result<(), StoreError> {
        tx.commit().await.map_err(|e| sqlx_error("commit", e))
    }

    async fn insert_outbox(
        &self,
        conn: &mut SqliteConnection,
        kind: MessageKind,
        records: &[MessageRecord],
    ) -> Result<(), StoreError> {
        // Wake the dispatcher when (and only if) this connection commits.
        let armed = Arc::new(AtomicBool::new(true));
        let wakers: Wakers = self.wakers().clone();
        let box_kind = kind.outbox();
        conn.lock_handle()
            .await
            .map_err(|e| sqlx_error("install the commit hook", e))?
            .set_commit_hook(move || {
                if armed.swap(false, Ordering::AcqRel) {
                    wakers.wake(box_kind);
                }
                true
            });
        let rows = records
            .iter()
            .map(|record| row_json(record, None))
            .collect::<Result<Vec<_>, _>>()?;
        sqlx::query(&insert_outbox(box_kind.table()))
            .bind(serde_json::Value::Array(rows).to_string())
            .execute(&mut *conn)
            .await
            .map_err(|e| sqlx_error("insert into the outbox", e))?;
        Ok(())
    }

    async fn claim(
        &self,
        box_kind: BoxKind,
        request: &ClaimRequest<'_>,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let queries = self.queries(box_kind);
        let mut tx = self
            .begin_immediate()
            .await
            .map_err(|e| sqlx_error("begin a claim", e))?;
        let due = crate::claim::due(self, &mut tx, box_kind, request).await?;
        if due.is_empty() {
            return Ok(Vec::new());
        }
        let seqs: Vec<i64> = due.iter().map(|d| d.seq).collect();
        // The holders of the expired leases taken over, by seq.
        let mut holders: std::collections::HashMap<i64, String> = due
            .into_iter()
            .filter_map(|d| d.holder.map(|holder| (d.seq, holder)))
            .collect();
        let lease = lease_modifier(request.lease);
        let rows = sqlx::query(&queries.claim)
            .bind(request.worker_id)
            .bind(lease)
            .bind(serde_json::to_string(&seqs).unwrap_or_default())
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| sqlx_error("claim rows", e))?;
        tx.commit()
            .await
            .map_err(|e| sqlx_error("commit a claim", e))?;
        let mut claimed = Vec::with_capacity(rows.len());
        let mut undecodable = Vec::new();
        for row in &rows {
            match row_view(row, box_kind) {
                Ok(view) => {
                    let mut message = view.message;
                    message.taken_over_from = holders.remove(&message.seq);
                    claimed.push(message);
                }
                Err(error) => undecodable.push(row_key(row)?.undecodable(&error)),
            }
        }
        if !undecodable.is_empty() {
            self.resolve(box_kind, request.worker_id, &undecodable)
                .await?;
        }
        claimed.sort_by_key(|m| m.seq);
        Ok(claimed)
    }

    async fn renew(
        &self,
        box_kind: BoxKind,
        worker_id: &str,
        lease: std::time::Duration,
    ) -> Result<Vec<(MessageId, Option<String>)>, StoreError> {
        let rows: Vec<(String, Option<String>)> = sqlx::query_as(&self.queries(box_kind).renew)
            .bind(worker_id)
            .bind(lease_modifier(lease))
            .fetch_all(self.workers())
            .await
            .map_err(|e| sqlx_error("renew leases", e))?;
        rows.into_iter()
            .map(|(id, subscriber)| {
                id.parse::<MessageId>()
                    .map(|id| (id, subscriber))
                    .map_err(crate::decode::bad)
            })
            .collect()
    }

    async fn transfer(
        &self,
        kind: MessageKind,
        worker_id: &str,
        deliveries: &[Delivery<'_>],
        outcomes: &[Outcome],
    ) -> Result<ReceiveReport, StoreError> {
        let mut tx = self
            .begin_immediate()
            .await
            .map_err(|e| sqlx_error("begin a transfer", e))?;
        let report = insert_inbox_rows(self, &mut tx, kind, deliveries).await?;
        resolve_on(self, &mut tx, kind.outbox(), worker_id, outcomes).await?;
        tx.commit()
            .await
            .map_err(|e| sqlx_error("commit a transfer", e))?;
        Ok(report)
    }

    async fn receive(
        &self,
        kind: MessageKind,
        deliveries: &[Delivery<'_>],
    ) -> Result<ReceiveReport, StoreError> {
        let mut tx = self
            .begin_immediate()
            .await
            .map_err(|e| sqlx_error("begin a receive", e))?;
        let report = insert_inbox_rows(self, &mut tx, kind, deliveries).await?;
        tx.commit()
            .await
            .map_err(|e| sqlx_error("commit a receive", e))?;
        Ok(report)
    }

    async fn complete_in(
        &self,
        tx: &mut Self::Tx,
        box_kind: BoxKind,
        id: MessageId,
        subscriber: Option<&str>,
        worker_id: &str,
    ) -> Result<bool, StoreError> {
        if self.queries(box_kind).mode != CompletionMode::Update {
            let completed = Outcome {
                id,
                subscriber: subscriber.map(str::to_owned),
                resolution: Resolution::Completed,
            };
            let n = resolve_on(self, tx, box_kind, worker_id, &[completed]).await?;
            return Ok(n == 1);
        }
        let done = sqlx::query(&self.queries(box_kind).complete)
            .bind(id.to_string())
            .bind(worker_id)
            .bind(subscriber)
            .execute(&mut **tx)
            .await
            .map_err(|e| sqlx_error("mark completed", e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn resolve(
        &self,
        box_kind: BoxKind,
        worker_id: &str,
        outcomes: &[Outcome],
    ) -> Result<(), StoreError> {
        // Several statements (a completion mode's, the attempts history's): one transaction.
        if self.queries(box_kind).mode != CompletionMode::Update
            || crate::attempts::any_failed(outcomes)
        {
            let mut tx = self
                .begin_immediate()
                .await
                .map_err(|e| sqlx_error("begin writing outcomes", e))?;
            resolve_on(self, &mut tx, box_kind, worker_id, outcomes).await?;
            return tx
                .commit()
                .await
                .map_err(|e| sqlx_error("commit outcomes", e));
        }
        let mut conn = self
            .workers()
            .acquire()
            .await
            .map_err(|e| sqlx_error("acquire a connection", e))?;
        resolve_on(self, &mut conn, box_kind, worker_id, outcomes)
            .await
            .map(|_| ())
    }

    async fn resolve_in(
        &self,
        tx: &mut Self::Tx,
        box_kind: BoxKind,
        worker_id: &str,
        outcomes: &[Outcome],
    ) -> Result<u64, StoreError> {
        resolve_on(self, tx, box_kind, worker_id, outcomes).await
    }

    /// Once the transaction has written (a mark must not take SQLite's one write lock for
    /// a chunk whose handlers have not written yet: a slow one would hold every writer
    /// up), a random mark written into `transaction_marks` (migration 0009): it is there
    /// for [`committed`](Store::committed) once the transaction committed, gone if it
    /// rolled back. `None` while nothing was written (nothing to apply twice). One mark in
    /// 256 also deletes the marks older than an hour.
    async fn transaction_mark(&self, tx: &mut Self::Tx) -> Result<Option<i64>, StoreError> {
        let written = crate::busy::writing(tx)
            .await
            .map_err(|e| sqlx_error("read the transaction's state", e))?;
        if !written {
            return Ok(None);
        }
        let mark: i64 = sqlx::query_scalar(&format!(
            "INSERT INTO transaction_marks (mark, at) VALUES (random(), {NOW}) RETURNING mark"
        ))
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| sqlx_error("write the transaction mark", e))?;
        if mark % 256 == 0 {
            sqlx::query(
                "DELETE FROM transaction_marks \
                 WHERE at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hour')",
            )
            .execute(&mut **tx)
            .await
            .map_err(|e| sqlx_error("delete old transaction marks", e))?;
        }
        Ok(Some(mark))
    }

    fn marks_lazily(&self) -> bool {
        true
    }

    async fn committed(&self, mark: i64) -> Result<Option<bool>, StoreError> {
        let found: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM transaction_marks WHERE mark = ?1)")
                .bind(mark)
                .fetch_one(self.workers())
                .await
                .map_err(|e| sqlx_error("read a transaction mark", e))?;
        Ok(Some(found))
    }

    async fn savepoint(&self, tx: &mut Self::Tx, step: SavepointStep) -> Result<(), StoreError> {
        sqlx::query(step.sql())
            .execute(&mut **tx)
            .await
            .map_err(|e| sqlx_error("savepoint", e))?;
        Ok(())
    }

    async fn register(&self, registration: &Registration<'_>) -> Result<(), StoreError> {
        crate::subscriptions::register(self, registration).await
    }

    async fn unregister(&self, process: &str) -> Result<(), StoreError> {
        crate::subscriptions::unregister(self, process).await
    }

    async fn routes(
        &self,
        kind: MessageKind,
        service: Option<&str>,
    ) -> Result<Vec<Route>, StoreError> {
        crate::subscriptions::routes(self, kind, service).await
    }

    async fn active_tenants(&self, box_kind: BoxKind) -> Result<Vec<TenantId>, StoreError> {
        let names: Vec<String> = sqlx::query_scalar(&self.queries(box_kind).tenants)
            .fetch_all(self.workers())
            .await
            .map_err(|e| sqlx_error("list active tenants", e))?;
        Ok(names
            .into_iter()
            .filter_map(|n| TenantId::new(n).ok())
            .collect())
    }

    async fn live_floor(&self, box_kind: BoxKind) -> Result<Option<i64>, StoreError> {
        sqlx::query_scalar(&self.queries(box_kind).floor)
            .fetch_one(self.workers())
            .await
            .map_err(|e| sqlx_error("read the live floor", e))
    }

    async fn relay(
        &self,
        kind: MessageKind,
        request: &ClaimRequest<'_>,
    ) -> Result<Option<bandeja_core::store::RelayReport>, StoreError> {
        crate::relay::relay(self, kind, request).await
    }

    fn single_writer(&self) -> bool {
        true
    }

    /// One commit per chunk of fast handlers: SQLite lets one writer at a time, so a
    /// transaction per message only queues the handlers behind each other's commits.
    fn prefers_batched_handlers(&self) -> bool {
        true
    }

    fn is_transient(&self, error: &(dyn std::error::Error + 'static)) -> bool {
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(store) = e.downcast_ref::<StoreError>() {
                return store.is_transient();
            }
            if let Some(sqlx) = e.downcast_ref::<sqlx::Error>() {
                return crate::is_transient(sqlx);
            }
            next = e.source();
        }
        false
    }

    fn wakers(&self) -> &Wakers {
        &self.inner.wakers
    }

    /// Every mode is supported: the returned handle shares the pool and the signals.
    fn with_completion(&self, modes: CompletionModes) -> Result<Self, StoreError> {
        Ok(self.with_modes(modes))
    }

    /// Deletes in chunks of 10 000 (one short write transaction each, so workers are not
    /// held up) until nothing is left to delete.
    async fn purge_completed(
        &self,
        box_kind: BoxKind,
        older_than: std::time::Duration,
    ) -> Result<u64, StoreError> {
        let queries = self.queries(box_kind);
        let modifier = ago(older_than);
        let mut total = 0u64;
        for sql in std::iter::once(&queries.purge).chain(&queries.purge_ledger) {
            loop {
                let done = sqlx::query(sql)
                    .bind(&modifier)
                    .execute(self.workers())
                    .await
                    .map_err(|e| sqlx_error("purge completed rows", e))?;
                total += done.rows_affected();
                if done.rows_affected() == 0 {
                    break;
                }
            }
        }
        // The attempts recorded before the window whose row is gone (not counted).
        let attempts =
            crate::attempts::purge_orphans(box_kind, "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1)");
        loop {
            let done = sqlx::query(&attempts)
                .bind(&modifier)
                .bind(ORPHANS_BATCH)
                .execute(self.workers())
                .await
                .map_err(|e| sqlx_error("purge old attempts", e))?;
            // A short batch was the last.
            if done.rows_affected() < ORPHANS_BATCH.unsigned_abs() {
                break;
            }
        }
        Ok(total)
    }

    async fn fail_stale(
        &self,
        box_kind: BoxKind,
        request: &StaleRequest<'_>,
    ) -> Result<StaleReport, StoreError> {
        let queries = self.queries(box_kind);
        let mut tx = self
            .begin_immediate()
            .await
            .map_err(|e| sqlx_error("begin the staleness check", e))?;
        let mut counts = Vec::with_capacity(2);
        for (sql, threshold, reason, other) in [
            (
                &queries.stale_pending,
                request.pending,
                request.pending_reason,
                request.processing_reason,
            ),
            (
                &queries.stale_processing,
                request.processing,
                request.processing_reason,
                request.pending_reason,
            ),
        ] {
            let done = sqlx::query(sql)
                .bind(ago(threshold))
                .bind(reason)
                .bind(other)
                .execute(&mut *tx)
                .await
                .map_err(|e| sqlx_error("mark stale rows FAILED", e))?;
            counts.push(done.rows_affected());
        }
        tx.commit()
            .await
            .map_err(|e| sqlx_error("commit the staleness check", e))?;
        Ok(StaleReport {
            pending: counts.first().copied().unwrap_or(0),
            processing: counts.get(1).copied().unwrap_or(0),
        })
    }
}

#[async_trait]
impl Inspect for SqliteStore {
    async fn rows(&self, box_kind: BoxKind) -> Result<Vec<RowView>, StoreError> {
        let rows = sqlx::query(&self.queries(box_kind).rows)
            .fetch_all(self.workers())
            .await
            .map_err(|e| sqlx_error("list rows", e))?;
        rows.iter().map(|row| row_view(row, box_kind)).collect()
    }

    async fn archived_rows(&self, box_kind: BoxKind) -> Result<Vec<RowView>, StoreError> {
        let rows = sqlx::query(&self.queries(box_kind).archived)
            .fetch_all(self.workers())
            .await
            .map_err(|e| sqlx_error("list archived rows", e))?;
        rows.iter().map(|row| row_view(row, box_kind)).collect()
    }
}
