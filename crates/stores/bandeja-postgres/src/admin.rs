//! `Admin` for PostgreSQL: counters, listings (of the boxes or their archives), counts,
//! retry, replay, outbox replay, purge and archive (see [`bandeja_core::admin`]); discard,
//! archive pruning, attempts and the timeline in [`history`]. SQL in [`sql`] (outbox
//! replay: [`outbox_replay`]); table names only from [`BoxKind`] and the store's validated
//! schema.

mod history;
mod outbox_replay;
mod sql;
mod subscribers;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use bandeja_core::admin::{
    Admin, BoxCounters, MessageFilter, MessageView, OutboxReplay, Page, StatusGroup,
};
use bandeja_core::{BoxKind, MessageId, MessageStatus, Store, StoreError, StoreErrorKind};
use chrono::{DateTime, Utc};
use sqlx::Row;

use crate::columns::seconds;
use crate::{sqlx_error, PgStore};

fn decode_error(e: impl Into<bandeja_core::BoxError>) -> StoreError {
    StoreError::new(StoreErrorKind::Permanent, "decode the counters", e)
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

impl PgStore {
    async fn status_groups(
        &self,
        box_kind: BoxKind,
        stuck_threshold: Duration,
    ) -> Result<Vec<StatusGroup>, StoreError> {
        let rows = sqlx::query(&sql::counters(self.schema(), box_kind))
            .bind(seconds(stuck_threshold))
            .fetch_all(self.pool())
            .await
            .map_err(|e| sqlx_error("count the rows of a box", e))?;
        let mut groups = Vec::with_capacity(rows.len());
        for row in &rows {
            let status: String = row.try_get("status").map_err(decode_error)?;
            groups.push(StatusGroup {
                tenant: row.try_get("tenant_id").map_err(decode_error)?,
                status: status.parse().map_err(decode_error)?,
                count: count(row.try_get("n").map_err(decode_error)?),
                oldest_modified_at: row.try_get("oldest").map_err(decode_error)?,
                stuck: count(row.try_get("stuck").map_err(decode_error)?),
                taken_over: count(row.try_get("taken_over").map_err(decode_error)?),
            });
        }
        Ok(groups)
    }

    /// The latest completion of the whole box, widening the look-back window until one
    /// is found (one statement).
    async fn last_processed_box(
        &self,
        box_kind: BoxKind,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        sqlx::query_scalar(&sql::last_processed_box(self.schema(), box_kind))
            .fetch_one(self.pool())
            .await
            .map_err(|e| sqlx_error("read the last completion", e))
    }

    /// The latest completion of each of `tenants`, widening the window for those not found.
    async fn last_processed_by_tenant(
        &self,
        box_kind: BoxKind,
        tenants: Vec<String>,
    ) -> Result<HashMap<String, DateTime<Utc>>, StoreError> {
        let mut found = HashMap::new();
        let mut missing = tenants;
        for window in sql::WINDOWS {
            if missing.is_empty() {
                break;
            }
            let statement = sql::last_processed(self.schema(), box_kind, window.is_some());
            let mut query = sqlx::query(&statement).bind(&missing);
            if let Some(secs) = window {
                query = query.bind(secs);
            }
            let rows = query
                .fetch_all(self.pool())
                .await
                .map_err(|e| sqlx_error("read the last completion", e))?;
            for row in &rows {
                let tenant: String = row.try_get("tenant_id").map_err(decode_error)?;
                let last: Option<DateTime<Utc>> = row.try_get("last").map_err(decode_error)?;
                if let Some(last) = last {
                    found.insert(tenant, last);
                }
            }
            missing.retain(|t| !found.contains_key(t));
        }
        Ok(found)
    }

    /// Sends rows of `from_status` matching `filter` back to PENDING in each box of `boxes`,
    /// waking each box that changed (here and, by `NOTIFY`, in other processes).
    async fn resubmit(
        &self,
        boxes: &[BoxKind],
        from_status: MessageStatus,
        filter: &MessageFilter,
    ) -> Result<u64, StoreError> {
        let mut changed = 0;
        for &box_kind in boxes {
            let statement =
                sql::resubmit(self.schema(), self.channel(), box_kind, from_status, filter);
            let n: i64 = statement
                .query()
                .fetch_one(self.pool())
                .await
                .map_err(|e| sqlx_error("resubmit rows", e))?
                .try_get("n")
                .map_err(decode_error)?;
            if n > 0 {
                self.wakers().wake(box_kind);
            }
            changed += count(n);
        }
        Ok(changed)
    }

    /// Runs a batch statement (`$1` cut-off, `$2` batch size) until a batch comes back short.
    async fn in_batches(
        &self,
        statement: &str,
        older_than: DateTime<Utc>,
        operation: &'static str,
    ) -> Result<u64, StoreError> {
        let older_than = sql::horizon(older_than);
        let mut total = 0;
        loop {
            let done = sqlx::query(statement)
                .bind(older_than)
                .bind(sql::BATCH)
                .execute(self.pool())
                .await
                .map_err(|e| sqlx_error(operation, e))?;
            total += done.rows_affected();
            if done.rows_affected() < count(sql::BATCH) {
                return Ok(total);
            }
        }
    }
}

#[async_trait]
impl Admin for PgStore {
    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(self.pool())
            .await
            .map_err(|e| sqlx_error("ping the database", e))?;
        Ok(())
    }

    async fn counters(
        &self,
        stuck_threshold: Duration,
        by_tenant: bool,
    ) -> Result<Vec<BoxCounters>, StoreError> {
        let mut all = Vec::new();
        for box_kind in BoxKind::ALL {
            let groups = self.status_groups(box_kind, stuck_threshold).await?;
            let mut counters = BoxCounters::fold(box_kind, by_tenant, &groups);
            if by_tenant {
                let tenants = counters.iter().filter_map(|c| c.tenant.clone()).collect();
                let last = self.last_processed_by_tenant(box_kind, tenants).await?;
                for c in &mut counters {
                    c.last_processed_at = c.tenant.as_ref().and_then(|t| last.get(t).copied());
                }
            } else {
                let last = self.last_processed_box(box_kind).await?;
                counters.iter_mut().for_each(|c| c.last_processed_at = last);
            }
            all.extend(counters);
        }
        Ok(all)
    }

    async fn list(
        &self,
        filter: &MessageFilter,
        page: Page,
    ) -> Result<Vec<MessageView>, StoreError> {
        filter.check_read()?;
        let mut views = Vec::new();
        for box_kind in filter.boxes() {
            let statement = sql::list(self.schema(), box_kind, filter, page);
            let rows = statement
                .query()
                .fetch_all(self.pool())
                .await
                .map_err(|e| sqlx_error("list messages", e))?;
            for row in &rows {
                views.push(sql::message_view(row, box_kind)?);
            }
        }
        Ok(views)
    }

    async fn count(&self, filter: &MessageFilter) -> Result<u64, StoreError> {
        filter.check_read()?;
        let mut total = 0;
        for box_kind in filter.boxes() {
            let n: i64 = sql::count(self.schema(), box_kind, filter)
                .query()
                .fetch_one(self.pool())
                .await
                .map_err(|e| sqlx_error("count messages", e))?
                .try_get("n")
                .map_err(decode_error)?;
            total += count(n);
        }
        Ok(total)
    }

    async fn show(&self, id: MessageId) -> Result<Vec<MessageView>, StoreError> {
        let mut views = Vec::new();
        for box_kind in BoxKind::ALL {
            for archived in [false, true] {
                let rows = sqlx::query(&sql::show(self.schema(), box_kind, archived))
                    .bind(id.0)
                    .fetch_all(self.pool())
                    .await
                    .map_err(|e| sqlx_error("show a message", e))?;
                for row in &rows {
                    views.push(sql::message_view(row, box_kind)?);
                }
            }
        }
        Ok(views)
    }

    async fn retry(&self, filter: &MessageFilter) -> Result<u64, StoreError> {
        filter.check_retry()?;
        self.resubmit(&filter.boxes(), MessageStatus::Failed, filter)
            .await
    }

    async fn replay(&self, filter: &MessageFilter) -> Result<u64, StoreError> {
        self.resubmit(&filter.replay_boxes()?, MessageStatus::Completed, filter)
            .await
    }

    async fn replay_outbox(&self, replay: &OutboxReplay) -> Result<u64, StoreError> {
        self.resend_outbox(replay).await
    }

    async fn count_outbox_replay(&self, replay: &OutboxReplay) -> Result<u64, StoreError> {
        self.count_resendable(replay).await
    }

    async fn purge(&self, box_kind: BoxKind, older_than: DateTime<Utc>) -> Result<u64, StoreError> {
        let statement = sql::purge(self.schema(), box_kind);
        let purged = self
            .in_batches(&statement, older_than, "purge completed rows")
            .await?;
        history::purge_attempts(self, box_kind, older_than).await?;
        Ok(purged)
    }

    async fn archive(
        &self,
        box_kind: BoxKind,
        older_than: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let statement = sql::archive(self.schema(), box_kind);
        self.in_batches(&statement, older_than, "archive completed rows")
            .await
    }

    async fn discard(
        &self,
        filter: &MessageFilter,
        discard: &bandeja_core::admin::Discard,
    ) -> Result<u64, StoreError> {
        history::discard(self, filter, discard).await
    }

    async fn purge_archive(
        &self,
        box_kind: BoxKind,
        older_than: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        history::purge_archive(self, box_kind, older_than).await
    }

    async fn attempts(
        &self,
        id: MessageId,
    ) -> Result<Vec<bandeja_core::admin::AttemptView>, StoreError> {
        history::attempts(self, id).await
    }

    async fn timeline(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Vec<bandeja_core::admin::MinuteStats>, StoreError> {
        history::timeline(self, since).await
    }

    async fn subscriptions(
        &self,
        live_for: Duration,
    ) -> Result<Vec<bandeja_core::admin::SubscriptionView>, StoreError> {
        subscribers::subscriptions(self, live_for).await
    }

    async fn retire(
        &self,
        kind: Option<bandeja_core::MessageKind>,
        subscriber: &str,
        settle: bandeja_core::admin::Settle,
        live_for: Duration,
    ) -> Result<bandeja_core::admin::RetireReport, StoreError> {
        subscribers::retire(self, kind, subscriber, settle, live_for).await
    }
}
