//! The `Admin` capability: what operators (the HTTP endpoints, the dashboard and the
//! `bandeja` CLI) read and change in the boxes — counters, listings, one message in full,
//! retry of FAILED rows, replay of COMPLETED inbox rows, purge and archive of old COMPLETED
//! rows. Separate from [`Store`](crate::Store): the workers never need it.
//!
//! Every filter travels to SQL as bound parameters; box names come from [`BoxKind`], never
//! from user text.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::envelope::MessageId;
use crate::error::StoreError;
use crate::record::BoxKind;
use crate::status::MessageStatus;
use crate::store::{Inspect, RowView};

/// The counters of one box (or of one tenant in one box), as `GET /boxes` shows them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BoxCounters {
    /// Which box.
    #[serde(rename = "box")]
    pub box_kind: BoxKind,
    /// The tenant these counters are for; `None`: the whole box.
    pub tenant: Option<String>,
    /// PENDING rows.
    pub pending: u64,
    /// PROCESSING rows.
    pub processing: u64,
    /// FAILED rows.
    pub failed: u64,
    /// PENDING rows created longer ago than the stuck threshold.
    pub stuck: u64,
    /// `created_at` of the oldest PENDING row.
    pub oldest_pending_at: Option<DateTime<Utc>>,
    /// The latest `completed_at`.
    pub last_processed_at: Option<DateTime<Utc>>,
}

/// Which rows an operator means. Every field narrows; the default matches every row of
/// every box. `since`/`until` bound `created_at` (inclusive / exclusive).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageFilter {
    /// Only this box; `None`: all four.
    pub box_kind: Option<BoxKind>,
    /// Only rows in this status.
    pub status: Option<MessageStatus>,
    /// Only this tenant's rows.
    pub tenant: Option<String>,
    /// Only this message type.
    pub message_type: Option<String>,
    /// Only this subscriber's rows (inboxes; outbox rows never match a subscriber filter).
    pub subscriber: Option<String>,
    /// Only rows created at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// Only rows created before this instant.
    pub until: Option<DateTime<Utc>>,
    /// Only this message id.
    pub id: Option<MessageId>,
}

/// A page of a listing: at most `limit` rows, newest first, starting after `before_seq`
/// when set (pass the last row's `seq` to get the next page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// At most this many rows (per box).
    pub limit: usize,
    /// Only rows with a `seq` below this one.
    pub before_seq: Option<i64>,
}

impl Default for Page {
    fn default() -> Self {
        Page {
            limit: 100,
            before_seq: None,
        }
    }
}

/// Capability: operate the boxes. Implemented by every store.
#[async_trait]
pub trait Admin: Inspect {
    /// Succeeds when the database answers a trivial query (health checks).
    async fn ping(&self) -> Result<(), StoreError>;

    /// The counters of each of the four boxes (`by_tenant`: one entry per box and tenant
    /// that has rows in a live or FAILED status). A PENDING row is stuck when it was
    /// created more than `stuck_threshold` ago.
    async fn counters(
        &self,
        stuck_threshold: Duration,
        by_tenant: bool,
    ) -> Result<Vec<BoxCounters>, StoreError>;

    /// The rows matching `filter`, newest first, one page of each box it covers.
    async fn list(&self, filter: &MessageFilter, page: Page) -> Result<Vec<RowView>, StoreError>;

    /// Every row holding message `id`: its outbox row and its inbox rows (one per
    /// subscriber), in all boxes.
    async fn show(&self, id: MessageId) -> Result<Vec<RowView>, StoreError>;

    /// Operator resubmission: FAILED rows matching `filter` go back to PENDING, due now,
    /// with `retry_count` 0; the resubmission is recorded on the row. Returns how many rows
    /// changed. The filter's status, if set, must be FAILED.
    async fn retry(&self, filter: &MessageFilter) -> Result<u64, StoreError>;

    /// Reprocessing after a bug fix: COMPLETED inbox rows matching `filter` go back to
    /// PENDING (recorded like a retry). Returns how many rows changed.
    async fn replay(&self, filter: &MessageFilter) -> Result<u64, StoreError>;

    /// Deletes COMPLETED rows of `box_kind` completed before `older_than`.
    async fn purge(&self, box_kind: BoxKind, older_than: DateTime<Utc>) -> Result<u64, StoreError>;

    /// Moves COMPLETED rows of `box_kind` completed before `older_than` into the box's
    /// archive table (`<box>_archive`).
    async fn archive(
        &self,
        box_kind: BoxKind,
        older_than: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
}
