//! `Admin` for SQLite: counters, listings (of the boxes or their archives), counts, retry,
//! replay, outbox replay, purge and archive (see [`bandeja_core::admin`]); discard,
//! archive pruning, attempts and the timeline in [`history`]. SQL in [`sql`] (outbox
//! replay: [`outbox_replay`]); table names only from [`BoxKind`].

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

use crate::{sqlx_error, SqliteStore};

fn decode_error(e: impl Into<bandeja_core::BoxError>) -> StoreError {
    StoreError::new(StoreErrorKind::Permanent, "decode the counters", e)
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

impl SqliteStore {
    async fn status_groups(
        &self,
        box_kind: BoxKind,
        stuck_before: &str,
    ) -> Result<Vec<StatusGroup>, StoreError> {
        let rows = sqlx::query(&sql::counters(box_kind))
            .bind(stuck_before)
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
                oldest_modified_at: crate::decode::opt_time(row, "oldest")?,
                stuck: count(
                    row.try_get::<Option<i64>, _>("stuck")
                        .map_err(decode_error)?
                        .unwrap_or(0),
                ),
                taken_over: count(
                    row.try_get::<Option<i64>, _>("taken_over")
                        .map_err(decode_error)?
                        .unwrap_or(0),
                ),
            });
        }
        Ok(groups)
    }

    async fn last_processed(
        &self,
        box_kind: BoxKind,
    ) -> Result<HashMap<String, DateTime<Utc>>, StoreError> {
        let rows = sqlx::query(&sql::last_processed(box_kind))
            .fetch_all(self.pool())
            .await
            .map_err(|e| sqlx_error("read the last completion", e))?;
        let mut last = HashMap::with_capacity(rows.len());
        for row in &rows {
            if let Some(at) = crate::decode::opt_time(row, "last")? {
                last.insert(row.try_get("tenant_id").map_err(decode_error)?, at);
            }
        }
        Ok(last)
    }

    /// Sends rows of `from_status` matching `filter` back to PENDING in each box of `boxes`.
    async fn resubmit(
        &self,
        boxes: &[BoxKind],
        from_status: MessageStatus,
        filter: &MessageFilter,
    ) -> Result<u64, StoreError> {
        let mut changed = 0;
        for &box_kind in boxes {
            let statement = sql::resubmit(box_kind, from_status, filter);
            let done = statement
                .query()
                .execute(self.pool())
                .await
                .map_err(|e| sqlx_error("resubmit rows", e))?;
            if done.rows_affected() > 0 {
                self.wakers().wake(box_kind);
            }
            changed += done.rows_affected();
        }
        Ok(changed)
    }
}

#[async_trait]
impl Admin for SqliteStore {
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
        let threshold =
            chrono::Duration::from_std(stuck_threshold).unwrap_or(chrono::Duration::MAX);
        let stuck_before = Utc::now()
            .checked_sub_signed(threshold)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let stuck_before = sql::time_text(stuck_before);
        let mut all = Vec::new();
        for box_kind in BoxKind::ALL {
            let groups = self.status_groups(box_kind, &stuck_before).await?;
            let mut counters = BoxCounters::fold(box_kind, by_tenant, &groups);
            let last = self.last_processed(box_kind).await?;
            for c in &mut counters {
                c.last_processed_at = match &c.tenant {
                    Some(tenant) => last.get(tenant).copied(),
                    None => last.values().max().copied(),
                };
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
            let statement = sql::list(box_kind, filter, page);
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
            let n: i64 = sql::count(box_kind, filter)
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
                let rows = sqlx::query(&sql::show(box_kind, archived))
                    .bind(id.to_string())
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
        let before = sql::horizon_text(older_than);
        let statement = sql::purge(box_kind);
        let mut total = 0;
        loop {
            let done = sqlx::query(&statement)
                .bind(&before)
                .bind(sql::BATCH)
                .execute(self.pool())
                .await
                .map_err(|e| sqlx_error("purge completed rows", e))?;
            total += done.rows_affected();
            if done.rows_affected() < count(sql::BATCH) {
                break;
            }
        }
        history::purge_attempts(self, box_kind, &before).await?;
        Ok(total)
    }

    async fn archive(
        &self,
        box_kind: BoxKind,
        older_than: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let before = sql::horizon_text(older_than);
        let (copy, delete) = (sql::archive(box_kind), sql::purge(box_kind));
        let mut total = 0;
        loop {
            let mut tx = self.begin().await?;
            let copied = sqlx::query(&copy)
                .bind(&before)
                .bind(sql::BATCH)
                .execute(&mut *tx)
                .await
                .map_err(|e| sqlx_error("copy completed rows to the archive", e))?;
            let deleted = sqlx::query(&delete)
                .bind(&before)
                .bind(sql::BATCH)
                .execute(&mut *tx)
                .await
                .map_err(|e| sqlx_error("delete archived rows", e))?;
            if copied.rows_affected() != deleted.rows_affected() {
                // Cannot happen inside one write transaction; roll back rather than lose rows.
                return Err(StoreError::new(
                    StoreErrorKind::Permanent,
                    "archive completed rows",
                    format!(
                        "copied {} rows but would delete {}: rolled back",
                        copied.rows_affected(),
                        deleted.rows_affected()
                    ),
                ));
            }
            self.commit(tx).await?;
            total += copied.rows_affected();
            if copied.rows_affected() < count(sql::BATCH) {
                return Ok(total);
            }
        }
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
