//! `Store` and `Inspect` for PostgreSQL.

use std::time::Duration;

use async_trait::async_trait;
use bandeja_core::config::{CompletionMode, CompletionModes};
use bandeja_core::store::{
    ClaimRequest, Delivery, Inspect, Outcome, Published, ReceiveReport, RelayReport, Route,
    RowView, SavepointStep, TransactionState,
};
use bandeja_core::store::{StaleReport, StaleRequest};
use bandeja_core::subscriptions::Registration;
use bandeja_core::wake::Wakers;
use bandeja_core::{
    BoxKind, MessageId, MessageKind, MessageRecord, Store, StoreError, StoredMessage, TenantId,
};
use sqlx::postgres::{PgConnection, Postgres};
use sqlx::{Connection, Row, Transaction};
use uuid::Uuid;

use crate::columns::{bind_outcomes, seconds, InboxBatch, MessageColumns};
use crate::decode::{row_key, row_view};
use crate::{sqlx_error, PgStore, MIGRATOR};

/// The mark of a batched transaction and its first handler's savepoint, in one round trip
/// ([`Store::mark_and_open`]); the savepoint is [`SavepointStep::Open`]'s.
const MARK_AND_OPEN: &str = "SELECT txid_current(); SAVEPOINT bandeja_handler";

/// Inserts inbox rows with dedup (and notifies the inbox's channel) on `conn`.
async fn insert_inbox_rows(
    store: &PgStore,
    conn: &mut PgConnection,
    kind: MessageKind,
    deliveries: &[Delivery<'_>],
) -> Result<ReceiveReport, StoreError> {
    let mut batch = InboxBatch::new(deliveries)?;
    if batch.is_empty() {
        return Ok(ReceiveReport::default());
    }
    let columns = std::mem::take(&mut batch.columns);
    let rows = columns
        .bind(sqlx::query(&store.queries(kind.inbox()).insert))
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| sqlx_error("insert into the inbox", e))?;
    let returned = rows
        .iter()
        .map(|row| {
            Ok((
                row.try_get::<Uuid, _>(0)?,
                row.try_get::<String, _>(1)?,
                row.try_get::<i32, _>(2)?,
            ))
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()
        .map_err(|e| sqlx_error("read the inbox insert", e))?;
    Ok(batch.report(&returned))
}

/// Applies outcomes in one statement on `conn`.
async fn resolve_on(
    store: &PgStore,
    conn: &mut PgConnection,
    box_kind: BoxKind,
    worker_id: &str,
    outcomes: &[Outcome],
) -> Result<u64, StoreError> {
    if outcomes.is_empty() {
        return Ok(0);
    }
    // The guard on a fresh `locked_by` token makes the planner expect one row of the box,
    // so it joins the outcomes in a nested loop that re-reads all of them for each row
    // (500 × 500: ≈ 150 ms a batch). Within this transaction, that plan is ruled out.
    let many = outcomes.len() > NESTED_LOOP_OUTCOMES;
    if many {
        set_nested_loops(conn, false).await?;
    }
    let written = write_outcomes(store, &mut *conn, box_kind, worker_id, outcomes).await?;
    // After a failed write the transaction is aborted (and the setting with it): the
    // write's error is the one to report.
    if many {
        set_nested_loops(conn, true).await?;
    }
    Ok(written)
}

/// Above this many outcomes, `resolve_on` rules out nested-loop joins.
const NESTED_LOOP_OUTCOMES: usize = 16;

/// `SET LOCAL enable_nestloop` (the caller is in a transaction).
async fn set_nested_loops(conn: &mut PgConnection, on: bool) -> Result<(), StoreError> {
    let sql = if on {
        "SET LOCAL enable_nestloop = on"
    } else {
        "SET LOCAL enable_nestloop = off"
    };
    sqlx::query(sql)
        .execute(conn)
        .await
        .map(|_| ())
        .map_err(|e| sqlx_error("set the outcome plan", e))
}

/// The outcome statement itself.
async fn write_outcomes(
    store: &PgStore,
    conn: &mut PgConnection,
    box_kind: BoxKind,
    worker_id: &str,
    outcomes: &[Outcome],
) -> Result<u64, StoreError> {
    let queries = store.queries(box_kind);
    // Only a batch holding a failure pays for the attempts history.
    let sql = if crate::attempts::any_failed(outcomes) {
        &queries.resolve_failing
    } else {
        &queries.resolve
    };
    let query = bind_outcomes(sqlx::query(sql), outcomes)?.bind(worker_id);
    if queries.mode == CompletionMode::Update {
        let done = query
            .execute(conn)
            .await
            .map_err(|e| sqlx_error("write outcomes", e))?;
        return Ok(done.rows_affected());
    }
    // `delete`/`archive`: one statement that deletes, archives and updates, and counts.
    let row = query
        .fetch_one(conn)
        .await
        .map_err(|e| sqlx_error("write outcomes", e))?;
    let n: i64 = row
        .try_get("n")
        .map_err(|e| sqlx_error("read the outcome count", e))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// How many orphaned attempts one statement of the retention deletes.
const ORPHANS_BATCH: i64 = 10_000;

impl PgStore {
    /// Inserts inbox rows in a transaction of their own, then wakes the inbox locally.
    async fn deliver(
        &self,
        kind: MessageKind,
        worker_id: Option<&str>,
        deliveries: &[Delivery<'_>],
        outcomes: &[Outcome],
    ) -> Result<ReceiveReport, StoreError> {
        let mut tx = self
            .pool()
            .begin()
            .await
            .map_err(|e| sqlx_error("begin an inbox insert", e))?;
        let report = insert_inbox_rows(self, &mut tx, kind, deliveries).await?;
        if let Some(worker_id) = worker_id {
            resolve_on(self, &mut tx, kind.outbox(), worker_id, outcomes).await?;
        }
        tx.commit()
            .await
            .map_err(|e| sqlx_error("commit an inbox insert", e))?;
        if report.inserted > 0 {
            self.local_wakers().wake(kind.inbox());
        }
        Ok(report)
    }
}

#[async_trait]
impl Store for PgStore {
    type Conn = PgConnection;
    type Tx = Transaction<'static, Postgres>;

    /// Creates the schema if missing and runs [`MIGRATOR`] with `search_path` set to it, on a
    /// connection taken out of the pool (and closed afterwards, so the setting never leaks).
    async fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self
            .pool()
            .acquire()
            .await
            .map_err(|e| sqlx_error("acquire a connection", e))?
            .detach();
        let result = async {
            // The migrations' `IF NOT EXISTS` (and sqlx's own table) would each send an
            // "already exists, skipping" notice, logged at INFO: not worth a line at every
            // start. Warnings and errors still come through.
            sqlx::query("SET client_min_messages = warning")
                .execute(&mut conn)
                .await
                .map_err(|e| sqlx_error("quiet the migration's notices", e))?;
            self.create_schema_on(&mut conn).await?;
            sqlx::query(&format!("SET search_path TO \"{}\"", self.schema()))
                .execute(&mut conn)
                .await
                .map_err(|e| sqlx_error("set the search path", e))?;
            MIGRATOR
                .run_direct(&mut conn)
                .await
                .map_err(|e| sqlx_error("run the migrations", e.into()))
        }
        .await;
        if let Err(error) = conn.close().await {
            tracing::debug!(%error, "closing the migration connection failed");
        }
        result
    }

    async fn begin(&self) -> Result<Self::Tx, StoreError> {
        self.pool()
            .begin()
            .await
            .map_err(|e| sqlx_error("begin a transaction", e))
    }

    async fn commit(&self, tx: Self::Tx) -> Result<(), StoreError> {
        tx.commit().await.map_err(|e| sqlx_error("commit", e))
    }

    /// One `INSERT … SELECT FROM UNNEST` for the whole batch, which also `pg_notify`s the
    /// channel: the notification goes out when (and only if) the caller's transaction commits.
    async fn insert_outbox(
        &self,
        conn: &mut PgConnection,
        kind: MessageKind,
        records: &[MessageRecord],
    ) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let columns = MessageColumns::outbox(records)?;
        columns
            .bind(sqlx::query(&self.queries(kind.outbox()).insert))
            .execute(&mut *conn)
            .await
            .map_err(|e| sqlx_error("insert into the outbox", e))?;
        Ok(())
    }

    /// One statement: the due rows are locked with `FOR UPDATE SKIP LOCKED` in a CTE and
    /// updated in place, so concurrent claimers never get the same row.
    async fn claim(
        &self,
        box_kind: BoxKind,
        request: &ClaimRequest<'_>,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        if request.limit == 0 {
            return Ok(Vec::new());
        }
        let sql = claim_sql(self, box_kind, request);
        let rows = bind_claim(sqlx::query(sql), box_kind, request)
            .fetch_all(self.pool())
            .await
            .map_err(|e| sqlx_error("claim rows", e))?;
        let mut claimed = Vec::with_capacity(rows.len());
        let mut undecodable = Vec::new();
        for row in &rows {
            match row_view(row, box_kind) {
                Ok(view) => claimed.push(view.message),
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

    async fn transaction_state(&self, tx: &mut Self::Tx) -> Result<TransactionState, StoreError> {
        // Outside a transaction block (ended by the handler) or in an aborted one, a
        // savepoint is refused; in a healthy one it costs nothing until the commit.
        match sqlx::query("SAVEPOINT bandeja_usable")
            .execute(&mut **tx)
            .await
        {
            Ok(_) => Ok(TransactionState::Open),
            Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("25P01") => {
                Ok(TransactionState::Ended)
            }
            Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("25P02") => {
                Ok(TransactionState::Aborted)
            }
            Err(error) => Err(sqlx_error("check the handler's transaction", error)),
        }
    }

    async fn transaction_mark(&self, tx: &mut Self::Tx) -> Result<Option<i64>, StoreError> {
        sqlx::query_scalar::<_, i64>("SELECT txid_current()")
            .fetch_one(&mut **tx)
            .await
            .map(Some)
            .map_err(|e| sqlx_error("read the transaction id", e))
    }

    /// `SELECT txid_current(); SAVEPOINT bandeja_handler` in one simple query: one round
    /// trip before a chunk's first handler instead of two.
    async fn mark_and_open(&self, tx: &mut Self::Tx) -> Result<Option<i64>, StoreError> {
        let rows = sqlx::Executor::fetch_all(&mut **tx, MARK_AND_OPEN)
            .await
            .map_err(|e| sqlx_error("open the handler's savepoint", e))?;
        Ok(match rows.first().map(|row| row.try_get::<i64, _>(0)) {
            Some(Ok(mark)) => Some(mark),
            Some(Err(error)) => {
                tracing::debug!(%error, "no transaction mark");
                None
            }
            None => None,
        })
    }

    async fn committed(&self, mark: i64) -> Result<Option<bool>, StoreError> {
        let status: Option<String> = sqlx::query_scalar("SELECT txid_status($1)")
            .bind(mark)
            .fetch_one(self.pool())
            .await
            .map_err(|e| sqlx_error("read a transaction's status", e))?;
        Ok(match status.as_deref() {
            Some("committed") => Some(true),
            Some("aborted") => Some(false),
            _ => None,
        })
    }

    async fn renew(
        &self,
        box_kind: BoxKind,
        worker_id: &str,
        lease: std::time::Duration,
    ) -> Result<Vec<(MessageId, Option<String>)>, StoreError> {
        let rows: Vec<(uuid::Uuid, Option<String>)> = sqlx::query_as(&self.queries(box_kind).renew)
            .bind(worker_id)
            .bind(seconds(lease))
            .fetch_all(self.lease_pool())
            .await
            .map_err(|e| sqlx_error("renew leases", e))?;
        Ok(rows
            .into_iter()
            .map(|(id, subscriber)| (MessageId(id), subscriber))
            .collect())
    }

    async fn transfer(
        &self,
        kind: MessageKind,
        worker_id: &str,
        deliveries: &[Delivery<'_>],
        outcomes: &[Outcome],
    ) -> Result<ReceiveReport, StoreError> {
        self.deliver(kind, Some(worker_id), deliveries, outcomes)
            .await
    }

    async fn receive(
        &self,
        kind: MessageKind,
        deliveries: &[Delivery<'_>],
    ) -> Result<ReceiveReport, StoreError> {
        self.deliver(kind, None, deliveries, &[]).await
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
                resolution: bandeja_core::store::Resolution::Completed,
            };
            let n = resolve_on(self, tx, box_kind, worker_id, &[completed]).await?;
            return Ok(n == 1);
        }
        let done = sqlx::query(&self.queries(box_kind).complete)
            .bind(id.0)
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
        if outcomes.len() <= NESTED_LOOP_OUTCOMES {
            let mut conn = self
                .pool()
                .acquire()
                .await
                .map_err(|e| sqlx_error("acquire a connection", e))?;
            return resolve_on(self, &mut conn, box_kind, worker_id, outcomes)
                .await
                .map(|_| ());
        }
        // Many outcomes: a transaction, for the plan setting of `resolve_on`.
        let mut tx = self
            .pool()
            .begin()
            .await
            .map_err(|e| sqlx_error("begin writing outcomes", e))?;
        resolve_on(self, &mut tx, box_kind, worker_id, outcomes).await?;
        tx.commit()
            .await
            .map_err(|e| sqlx_error("commit outcomes", e))
    }

    async fn relay(
        &self,
        kind: MessageKind,
        request: &ClaimRequest<'_>,
    ) -> Result<Option<RelayReport>, StoreError> {
        let queries = self.queries(kind.outbox());
        let sql = if request.tenant.is_some() {
            &queries.relay_tenant
        } else {
            &queries.relay
        };
        let row = sqlx::query(sql)
            .bind(request.ordered)
            .bind(i64::try_from(request.limit).unwrap_or(i64::MAX))
            .bind(request.worker_id)
            .bind(seconds(request.lease))
            .bind(request.from_seq)
            .bind(request.tenant.map(|t| t.as_str().to_owned()))
            .fetch_one(self.pool())
            .await
            .map_err(|e| sqlx_error("relay outbox rows into the inbox", e))?;
        let count = |column: &str| -> Result<u64, StoreError> {
            let n: i64 = row
                .try_get(column)
                .map_err(|e| sqlx_error("read the relay report", e))?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        let types: Option<Vec<String>> = row
            .try_get("published_types")
            .map_err(|e| sqlx_error("read the relay report", e))?;
        let waits: Option<Vec<f64>> = row
            .try_get("published_waits")
            .map_err(|e| sqlx_error("read the relay report", e))?;
        let published = types
            .unwrap_or_default()
            .into_iter()
            .zip(waits.unwrap_or_default())
            .map(|(message_type, waited)| Published {
                message_type,
                waited: Duration::try_from_secs_f64(waited).unwrap_or_default(),
            })
            .collect();
        let report = RelayReport {
            published,
            moved: count("moved")?,
            inserted: count("inserted")?,
            duplicates: count("duplicates")?,
            failed: count("failed")?,
        };
        if report.inserted > 0 {
            self.local_wakers().wake(kind.inbox());
        }
        Ok(Some(report))
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

    async fn maintain(&self, box_kind: BoxKind) -> Result<(), StoreError> {
        crate::maintenance::maintain(self, box_kind).await
    }

    async fn active_tenants(&self, box_kind: BoxKind) -> Result<Vec<TenantId>, StoreError> {
        let names: Vec<String> = sqlx::query_scalar(&self.queries(box_kind).tenants)
            .fetch_all(self.pool())
            .await
            .map_err(|e| sqlx_error("list active tenants", e))?;
        Ok(names
            .into_iter()
            .filter_map(|n| TenantId::new(n).ok())
            .collect())
    }

    async fn live_floor(&self, box_kind: BoxKind) -> Result<Option<i64>, StoreError> {
        sqlx::query_scalar(&self.queries(box_kind).floor)
            .fetch_one(self.pool())
            .await
            .map_err(|e| sqlx_error("read the live floor", e))
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

    async fn savepoint(&self, tx: &mut Self::Tx, step: SavepointStep) -> Result<(), StoreError> {
        sqlx::query(step.sql())
            .execute(&mut **tx)
            .await
            .map_err(|e| sqlx_error("savepoint", e))?;
        Ok(())
    }

    fn prefers_batched_handlers(&self) -> bool {
        true
    }

    /// Serialization failures, deadlocks, `lock_not_available` and lost connections,
    /// anywhere in the error's source chain (see `transient`).
    fn is_transient(&self, error: &(dyn std::error::Error + 'static)) -> bool {
        crate::transient::in_chain(error)
    }

    /// The store's wake-up signals; starts the `NOTIFY` relay if it is not running yet.
    fn wakers(&self) -> &Wakers {
        self.ensure_relay();
        self.local_wakers()
    }

    /// Every mode is supported: the returned handle shares the pool, the signals and the
    /// relay, and carries the statements of `modes`.
    fn with_completion(&self, modes: CompletionModes) -> Result<Self, StoreError> {
        Ok(self.with_modes(modes))
    }

    /// Deletes in chunks of 10 000 until nothing is left to delete.
    async fn purge_completed(
        &self,
        box_kind: BoxKind,
        older_than: std::time::Duration,
    ) -> Result<u64, StoreError> {
        let sql = &self.queries(box_kind).purge;
        let mut total = 0u64;
        loop {
            let n: i64 = sqlx::query_scalar(sql)
                .bind(seconds(older_than))
                .fetch_one(self.pool())
                .await
                .map_err(|e| sqlx_error("purge completed rows", e))?;
            let n = u64::try_from(n).unwrap_or(0);
            total += n;
            if n == 0 {
                break;
            }
        }
        // The attempts recorded before the window whose row is gone (not counted).
        let attempts = crate::attempts::purge_orphans(
            self.schema(),
            box_kind,
            "statement_timestamp() - $1::float8 * interval '1 second'",
        );
        loop {
            let done = sqlx::query(&attempts)
                .bind(seconds(older_than))
                .bind(ORPHANS_BATCH)
                .execute(self.pool())
                .await
                .map_err(|e| sqlx_error("purge old attempts", e))?;
            // A short batch was the last.
            if done.rows_affected() < ORPHANS_BATCH.unsigned_abs() {
                return Ok(total);
            }
        }
    }

    async fn fail_stale(
        &self,
        box_kind: BoxKind,
        request: &StaleRequest<'_>,
    ) -> Result<StaleReport, StoreError> {
        let (pending, processing): (i64, i64) = sqlx::query_as(&self.queries(box_kind).fail_stale)
            .bind(seconds(request.pending))
            .bind(request.pending_reason)
            .bind(seconds(request.processing))
            .bind(request.processing_reason)
            .fetch_one(self.pool())
            .await
            .map_err(|e| sqlx_error("mark stale rows FAILED", e))?;
        Ok(StaleReport {
            pending: u64::try_from(pending).unwrap_or(0),
            processing: u64::try_from(processing).unwrap_or(0),
        })
    }
}

#[async_trait]
impl Inspect for PgStore {
    async fn rows(&self, box_kind: BoxKind) -> Result<Vec<RowView>, StoreError> {
        let rows = sqlx::query(&self.queries(box_kind).rows)
            .fetch_all(self.pool())
            .await
            .map_err(|e| sqlx_error("list rows", e))?;
        rows.iter().map(|row| row_view(row, box_kind)).collect()
    }

    async fn archived_rows(&self, box_kind: BoxKind) -> Result<Vec<RowView>, StoreError> {
        let rows = sqlx::query(&self.queries(box_kind).archived)
            .fetch_all(self.pool())
            .await
            .map_err(|e| sqlx_error("list archived rows", e))?;
        rows.iter().map(|row| row_view(row, box_kind)).collect()
    }
}

/// The statement a claim of `box_kind` runs for `request` (the per-tenant one with a tenant).
pub(crate) fn claim_sql<'s>(
    store: &'s PgStore,
    box_kind: BoxKind,
    request: &ClaimRequest<'_>,
) -> &'s str {
    let queries = store.queries(box_kind);
    if request.tenant.is_some() {
        &queries.claim_tenant
    } else {
        &queries.claim
    }
}

/// Binds a claim's parameters (see [`claim_sql`]) to `query`: the claim itself, or the
/// same statement under `EXPLAIN` (`testing::explain_claim`).
pub(crate) fn bind_claim<'q>(
    query: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    box_kind: BoxKind,
    request: &ClaimRequest<'q>,
) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
    let mut query = query
        .bind(request.ordered)
        .bind(i64::try_from(request.limit).unwrap_or(i64::MAX))
        .bind(request.worker_id)
        .bind(seconds(request.lease))
        .bind(request.from_seq);
    if let Some(tenant) = request.tenant {
        query = query.bind(tenant.as_str().to_owned());
    }
    if box_kind.is_inbox() {
        let claimable = request.subscribers;
        query = query
            .bind(claimable.map(|c| c.iter().map(|k| k.subscriber.as_str()).collect::<Vec<_>>()))
            .bind(claimable.map(|c| {
                c.iter()
                    .map(|k| k.message_type.as_deref())
                    .collect::<Vec<_>>()
            }))
            .bind(claimable.map(|c| {
                c.iter()
                    .map(|k| k.tenant.as_ref().map(TenantId::as_str))
                    .collect::<Vec<_>>()
            }));
    }
    query
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folded_savepoint_is_the_one_handlers_release() {
        assert!(MARK_AND_OPEN.ends_with(SavepointStep::Open.sql()));
    }
}
