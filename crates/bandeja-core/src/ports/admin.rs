//! The `Admin` capability: what operators (the HTTP endpoints, the dashboard and the
//! `bandeja` CLI) read and change in the boxes — counters, listings, one message in full,
//! retry of FAILED rows, replay of COMPLETED inbox rows, replay of COMPLETED outbox rows
//! ([`OutboxReplay`]), purge and archive of old COMPLETED rows. Separate from
//! [`Store`](crate::Store): the workers never need it.
//!
//! Every value an operator types (tenant, type, subscriber, id, times) travels to SQL as a
//! bound parameter; box names come from [`BoxKind`] and statuses from [`MessageStatus`],
//! closed enums, never from user text.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::envelope::MessageId;
use crate::error::{StoreError, StoreErrorKind};
use crate::ports::sagas::SagaStore;
use crate::record::BoxKind;
use crate::status::MessageStatus;
use crate::store::{Inspect, RowView};

mod history;
pub mod listing;
mod outbox_replay;
mod subscribers;

pub use history::{
    merge_timeline, timeline_start, AttemptOutcome, AttemptView, Discard, MinuteCount, MinuteStats,
    MAX_ATTEMPTS_KEPT, TIMELINE_WINDOW,
};
pub use outbox_replay::{OutboxReplay, ReplayRefused};
pub use subscribers::{
    attendance, check_retirable, kept_reason, kind_plural, longest_live_for, parse_kind,
    retired_kinds, Attendance, ListedSubscription, ProcessView, RetireRefused, RetireReport,
    RetiredSubscription, Settle, SubscriberState, SubscriptionListing, SubscriptionView,
};

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
    /// PENDING rows unchanged for longer than the stuck threshold: their last change
    /// (`last_modified_at`: insert, a release back to PENDING after a failed attempt, an
    /// operator's retry or replay) is older than the threshold. An old row an operator just
    /// retried is not stuck; it is again if nothing takes it for that long.
    pub stuck: u64,
    /// PENDING, PROCESSING or FAILED rows whose lease was taken over at least once
    /// (`takeover_count > 0`): a worker holding them stopped (a crash, a kill, a lost
    /// connection) and another took them over after the lease ran out. COMPLETED rows are
    /// not counted (their history is never scanned).
    pub taken_over: u64,
    /// The oldest `last_modified_at` among the PENDING rows: since when the PENDING row
    /// left alone the longest has been waiting (what `stuck` measures).
    pub oldest_pending_at: Option<DateTime<Utc>>,
    /// The latest `completed_at`.
    pub last_processed_at: Option<DateTime<Utc>>,
}

impl BoxCounters {
    /// All zero: the counters of an empty box (or tenant).
    pub fn new(box_kind: BoxKind, tenant: Option<String>) -> Self {
        BoxCounters {
            box_kind,
            tenant,
            pending: 0,
            processing: 0,
            failed: 0,
            stuck: 0,
            taken_over: 0,
            oldest_pending_at: None,
            last_processed_at: None,
        }
    }

    /// Adds one group of rows counted by a store.
    pub fn absorb(&mut self, group: &StatusGroup) {
        if group.status != MessageStatus::Completed {
            self.taken_over += group.taken_over;
        }
        match group.status {
            MessageStatus::Pending => {
                self.pending += group.count;
                self.stuck += group.stuck;
                self.oldest_pending_at = match (self.oldest_pending_at, group.oldest_modified_at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            MessageStatus::Processing => self.processing += group.count,
            MessageStatus::Failed => self.failed += group.count,
            MessageStatus::Completed => {}
        }
    }

    /// Folds the groups a store counted in one box into counters: one entry for the box,
    /// or (`by_tenant`) one per tenant, by tenant name.
    pub fn fold(box_kind: BoxKind, by_tenant: bool, groups: &[StatusGroup]) -> Vec<BoxCounters> {
        if !by_tenant {
            let mut total = BoxCounters::new(box_kind, None);
            groups.iter().for_each(|g| total.absorb(g));
            return vec![total];
        }
        let mut per_tenant: std::collections::BTreeMap<&str, BoxCounters> = Default::default();
        for group in groups {
            per_tenant
                .entry(&group.tenant)
                .or_insert_with(|| BoxCounters::new(box_kind, Some(group.tenant.clone())))
                .absorb(group);
        }
        per_tenant.into_values().collect()
    }
}

/// What a store counts for [`Admin::counters`]: the rows of one tenant in one status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusGroup {
    /// The tenant.
    pub tenant: String,
    /// The status.
    pub status: MessageStatus,
    /// How many rows.
    pub count: u64,
    /// The oldest `last_modified_at` among them (PENDING groups).
    pub oldest_modified_at: Option<DateTime<Utc>>,
    /// How many were last modified before the stuck threshold (PENDING groups).
    pub stuck: u64,
    /// How many were taken over at least once (`takeover_count > 0`).
    pub taken_over: u64,
}

/// Which rows an operator means. Every field narrows; the default matches every row of
/// every box. `since`/`until` bound `created_at` (inclusive / exclusive), `completed_before`
/// bounds `completed_at` and `archived_before` bounds `archived_at` (both exclusive); each
/// is compared with the time as the store records it (see [`Admin::purge`]).
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
    /// Only rows completed before this instant, compared with `completed_at` as the store
    /// records it (as [`Admin::purge`] compares its horizon); rows never completed do not
    /// match. With `status: Some(Completed)`: the rows a purge at this horizon would take.
    pub completed_before: Option<DateTime<Utc>>,
    /// Only rows whose headers carry this correlation id (`headers.correlation_id`, equal).
    pub correlation_id: Option<String>,
    /// Read the archive tables (`<box>_archive`, see [`archive_table`]) instead of the
    /// boxes: [`Admin::list`] and [`Admin::count`] with the same filters, the status being
    /// the archived row's (COMPLETED for archived completions, FAILED for discarded rows).
    /// Operations that change rows ([`Admin::retry`], [`Admin::replay`],
    /// [`Admin::discard`]) refuse it.
    pub archived: bool,
    /// Only rows archived before this instant, compared with `archived_at` as the store
    /// records it (as [`Admin::purge_archive`] compares its horizon, like
    /// `completed_before`). With `archived: true`: the rows a `purge_archive` at this
    /// horizon would take, so [`Admin::count`] says exactly how many it will delete.
    ///
    /// Only archived rows have an `archived_at`: with `archived: false` the filter is
    /// refused, by [`Admin::list`] and [`Admin::count`] ([`MessageFilter::check_read`])
    /// and by every operation that changes rows, rather than ignored (ignoring it would
    /// widen what the caller asked for).
    pub archived_before: Option<DateTime<Utc>>,
}

impl MessageFilter {
    /// The boxes whose rows this filter can match, in [`BoxKind::ALL`] order: the chosen
    /// box (or all four), without the outboxes when a subscriber is set.
    pub fn boxes(&self) -> Vec<BoxKind> {
        BoxKind::ALL
            .into_iter()
            .filter(|b| self.box_kind.is_none_or(|wanted| wanted == *b))
            .filter(|b| self.subscriber.is_none() || b.is_inbox())
            .collect()
    }

    /// Checks that the filter suits [`Admin::retry`]: its status, if set, is FAILED, and it
    /// reads the boxes, not the archives.
    pub fn check_retry(&self) -> Result<(), StoreError> {
        self.check_live("retry messages", "retry")?;
        match self.status {
            None | Some(MessageStatus::Failed) => Ok(()),
            Some(other) => Err(invalid(
                "retry messages",
                format!("retry resubmits FAILED rows only; the filter asks for {other} rows"),
            )),
        }
    }

    /// Checks that the filter suits [`Admin::replay`]: its status, if set, is COMPLETED,
    /// and its box, if set, is an inbox.
    pub fn check_replay(&self) -> Result<(), StoreError> {
        self.check_live("replay messages", "replay")?;
        if let Some(other) = self.status.filter(|s| *s != MessageStatus::Completed) {
            return Err(invalid(
                "replay messages",
                format!("replay resubmits COMPLETED rows only; the filter asks for {other} rows"),
            ));
        }
        if let Some(outbox) = self.box_kind.filter(|b| !b.is_inbox()) {
            return Err(invalid(
                "replay messages",
                format!(
                    "replay applies to inboxes (inbox_events, inbox_commands), not {outbox}: \
                     to send COMPLETED outbox rows again, replay the outbox \
                     (`bandeja replay --outbox`)"
                ),
            ));
        }
        Ok(())
    }

    /// Checks that the filter suits [`Admin::discard`]: its status, if set, is FAILED, and
    /// it reads the boxes, not the archives.
    pub fn check_discard(&self) -> Result<(), StoreError> {
        self.check_live("discard messages", "discard")?;
        match self.status {
            None | Some(MessageStatus::Failed) => Ok(()),
            Some(other) => Err(invalid(
                "discard messages",
                format!(
                    "discard moves FAILED rows only into the archive; the filter asks for \
                     {other} rows"
                ),
            )),
        }
    }

    /// Checks that the filter can be read ([`Admin::list`], [`Admin::count`]):
    /// `archived_before` is set only together with `archived` (it bounds `archived_at`,
    /// which only the archive tables have).
    pub fn check_read(&self) -> Result<(), StoreError> {
        if self.archived_before.is_none() || self.archived {
            return Ok(());
        }
        Err(invalid(
            "read messages",
            "`archived_before` bounds when rows were archived, and only archived rows have \
             that time: read the archive tables (`archived`, `--archived`, `archived=true`) \
             or drop `archived_before`"
                .to_owned(),
        ))
    }

    fn check_live(&self, operation: &'static str, verb: &str) -> Result<(), StoreError> {
        if !self.archived && self.archived_before.is_none() {
            return Ok(());
        }
        Err(invalid(
            operation,
            format!(
                "{verb} applies to the rows in the boxes, not to archived rows: drop the \
                 archive filter (to send archived outbox rows again, replay the outbox, which \
                 reads the archives itself)"
            ),
        ))
    }

    /// The inboxes [`Admin::replay`] changes, once [`MessageFilter::check_replay`] passed:
    /// [`MessageFilter::boxes`] without the outboxes.
    pub fn replay_boxes(&self) -> Result<Vec<BoxKind>, StoreError> {
        self.check_replay()?;
        let mut boxes = self.boxes();
        boxes.retain(|b| b.is_inbox());
        Ok(boxes)
    }
}

fn invalid(operation: &'static str, message: String) -> StoreError {
    StoreError::new(StoreErrorKind::Permanent, operation, message)
}

/// The largest page [`Admin::list`] returns, whatever [`Page::limit`] asks for.
pub const MAX_PAGE: usize = 10_000;

/// A page of a listing of one box: at most `limit` rows, newest first. With `before_seq`:
/// the rows just below it (pass the last row's `seq` to get the next, older page); with
/// `after_seq`: the `limit` rows just above it (the next newer page), still listed newest
/// first. Across boxes, [`listing::list_page`] merges pages into one ordering and one
/// cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// At most this many rows (per box), capped at [`MAX_PAGE`].
    pub limit: usize,
    /// Only rows with a `seq` below this one.
    pub before_seq: Option<i64>,
    /// Only rows with a `seq` above this one, the closest to it first taken: the page
    /// holds the `limit` lowest such `seq`s.
    pub after_seq: Option<i64>,
}

impl Page {
    /// The limit as a SQL `LIMIT` value, capped at [`MAX_PAGE`].
    pub fn sql_limit(&self) -> i64 {
        i64::try_from(self.limit.min(MAX_PAGE)).unwrap_or(0)
    }
}

impl Default for Page {
    fn default() -> Self {
        Page {
            limit: 100,
            before_seq: None,
            after_seq: None,
        }
    }
}

/// A row as an operator sees it: the [`RowView`] (which it dereferences to, so
/// `view.message.status` works) plus the columns only operators need.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageView {
    /// The message and its bookkeeping columns.
    pub row: RowView,
    /// When the row last changed.
    pub last_modified_at: DateTime<Utc>,
    /// When an inbox row was first received (`None` for outbox rows).
    pub received_at: Option<DateTime<Utc>>,
    /// How many times an operator resubmitted the row ([`Admin::retry`], [`Admin::replay`]).
    pub resubmitted_count: u32,
    /// When an operator last resubmitted it.
    pub resubmitted_at: Option<DateTime<Utc>>,
    /// When the row was moved into its box's archive table; `None` for a row read from a
    /// box.
    pub archived_at: Option<DateTime<Utc>>,
    /// Who discarded it ([`Discard::by`]), for a row an operator discarded.
    pub discarded_by: Option<String>,
    /// Why ([`Discard::reason`]), for a row an operator discarded.
    pub discard_reason: Option<String>,
}

impl std::ops::Deref for MessageView {
    type Target = RowView;

    fn deref(&self) -> &RowView {
        &self.row
    }
}

/// The archive table of a box: `<box>_archive` (same columns plus `archived_at`,
/// `discarded_by` and `discard_reason`).
pub const fn archive_table(box_kind: BoxKind) -> &'static str {
    match box_kind {
        BoxKind::OutboxEvents => "outbox_events_archive",
        BoxKind::InboxEvents => "inbox_events_archive",
        BoxKind::OutboxCommands => "outbox_commands_archive",
        BoxKind::InboxCommands => "inbox_commands_archive",
    }
}

/// Capability: operate the boxes (and see the sagas: [`SagaStore::list_sagas`],
/// [`SagaStore::saga`]). Implemented by every store.
#[async_trait]
pub trait Admin: Inspect + SagaStore {
    /// Succeeds when the database answers a trivial query (health checks).
    async fn ping(&self) -> Result<(), StoreError>;

    /// The counters of each of the four boxes (`by_tenant`: one entry per box and tenant
    /// that has rows in a live or FAILED status). A PENDING row is stuck when its last
    /// change (`last_modified_at`, not `created_at`) is more than `stuck_threshold` ago;
    /// `oldest_pending_at` is the oldest such change among PENDING rows.
    async fn counters(
        &self,
        stuck_threshold: Duration,
        by_tenant: bool,
    ) -> Result<Vec<BoxCounters>, StoreError>;

    /// The rows matching `filter`, newest first (by `seq`), one page of each box it
    /// covers, boxes in [`BoxKind::ALL`] order; with [`MessageFilter::archived`], of the
    /// boxes' archive tables instead (the archived rows keep the `seq` they had in their
    /// box). Refused when [`MessageFilter::check_read`] fails.
    async fn list(
        &self,
        filter: &MessageFilter,
        page: Page,
    ) -> Result<Vec<MessageView>, StoreError>;

    /// How many rows match `filter`, over every box it covers: what [`Admin::list`] would
    /// return page after page, counted in the database (one `count(*)` per box, the same
    /// bound filters), without reading a row. Refused when [`MessageFilter::check_read`]
    /// fails.
    async fn count(&self, filter: &MessageFilter) -> Result<u64, StoreError>;

    /// Every row holding message `id`: its outbox row and its inbox rows (one per
    /// subscriber, by subscriber), and its rows in the archive tables (with
    /// [`MessageView::archived_at`] set), boxes in [`BoxKind::ALL`] order, each box's live
    /// rows before its archived ones. Empty if none.
    async fn show(&self, id: MessageId) -> Result<Vec<MessageView>, StoreError>;

    /// Operator resubmission: FAILED rows matching `filter` go back to PENDING, due now,
    /// with `retry_count` 0, `takeover_count` 0 (a row FAILED by crashes gets its
    /// `max-takeovers` again, as one FAILED by errors gets its `max-retries`) and no lease; the resubmission is recorded on the row
    /// (`resubmitted_count + 1`, `resubmitted_at`), `last_error` is kept. Rows in any other
    /// status are never touched. Wakes the workers of the boxes that changed. Returns how
    /// many rows changed. The filter's status, if set, must be FAILED
    /// ([`MessageFilter::check_retry`]).
    async fn retry(&self, filter: &MessageFilter) -> Result<u64, StoreError>;

    /// Reprocessing after a bug fix: COMPLETED inbox rows matching `filter` go back to
    /// PENDING (recorded like a retry, `completed_at` cleared). Outbox rows are never
    /// touched. The filter's status, if set, must be COMPLETED and its box, if set, an
    /// inbox ([`MessageFilter::check_replay`]). Returns how many rows changed. To send
    /// outbox rows again, see [`Admin::replay_outbox`].
    async fn replay(&self, filter: &MessageFilter) -> Result<u64, StoreError>;

    /// Re-sending: the COMPLETED outbox rows `replay` chooses go back to PENDING, due now,
    /// recorded like a retry (`retry_count` and `takeover_count` 0, no lease,
    /// `resubmitted_count + 1`, `resubmitted_at`, `completed_at` cleared, `last_error`
    /// kept, `seq` kept so per-key order holds), in batches (one short statement or
    /// transaction each); the outbox workers are woken. Rows in the box's archive table
    /// ([`archive_table`]: `archive` completion mode, or an operator's
    /// [`Admin::archive`]) that match are moved back into the box the same way, unless the
    /// box already holds a row with their id. Rows completed again while the replay runs,
    /// and rows created after it started, are not taken.
    ///
    /// Then the system does what it always does: the in-process relay inserts one inbox row
    /// per subscriber with dedup on `(id, subscriber)` — an existing row only counts one
    /// more delivery, its status untouched — so only the subscribers that lack the message
    /// get a row (a new subscriber is backfilled); over a broker the receiving inbox
    /// deduplicates the same way.
    ///
    /// Refused (a [`ReplayRefused`] inside the error, nothing changed) when
    /// [`OutboxReplay::check`] fails, and when a box it covers completes in `delete` mode
    /// as this store handle is configured
    /// ([`Store::with_completion`](crate::Store::with_completion)): such a box keeps no
    /// COMPLETED row. Returns how many rows were sent again.
    async fn replay_outbox(&self, replay: &OutboxReplay) -> Result<u64, StoreError>;

    /// How many rows [`Admin::replay_outbox`] would send again now: the COMPLETED rows of
    /// each outbox it covers plus the matching archived rows whose id the box does not
    /// hold, counted in the database. Refused as `replay_outbox` is.
    async fn count_outbox_replay(&self, replay: &OutboxReplay) -> Result<u64, StoreError>;

    /// Deletes COMPLETED rows of `box_kind` completed before `older_than`, in batches (one
    /// short transaction each). Returns how many rows were deleted. Purged inbox rows no
    /// longer absorb a redelivery of their message. Then deletes the attempts of that box
    /// recorded before `older_than` whose row is neither in the box nor in its archive
    /// (the attempts of the rows just purged, and of rows removed earlier).
    ///
    /// "Before" compares `older_than` with `completed_at` as the store records it (to the
    /// millisecond on SQLite, the microsecond on PostgreSQL), never with a horizon cut to
    /// that precision: a row recorded as completed at 10:00:00.123 goes with a horizon of
    /// 10:00:00.123456, so a purge with `older_than` = now takes every row completed so far.
    async fn purge(&self, box_kind: BoxKind, older_than: DateTime<Utc>) -> Result<u64, StoreError>;

    /// Moves COMPLETED rows of `box_kind` completed before `older_than` into the box's
    /// archive table ([`archive_table`]), in batches (each batch copied and deleted in one
    /// transaction). Returns how many rows were moved. The horizon is compared as for
    /// [`Admin::purge`].
    async fn archive(
        &self,
        box_kind: BoxKind,
        older_than: DateTime<Utc>,
    ) -> Result<u64, StoreError>;

    /// Moves the FAILED rows matching `filter` into their box's archive table
    /// ([`archive_table`]), recording `archived_at`, `discarded_by` and `discard_reason`
    /// ([`Discard`]), in batches (each batch copied and deleted in one transaction). Rows
    /// in any other status are never touched. The filter's status, if set, must be FAILED,
    /// and it must read the boxes ([`MessageFilter::check_discard`]). Returns how many rows
    /// moved.
    ///
    /// A discarded row leaves its box as an archived COMPLETED row does
    /// ([`Admin::archive`]): [`Admin::show`] and a listing with
    /// [`MessageFilter::archived`] still find it, with who and why, and its attempts
    /// ([`Admin::attempts`]) are kept until [`Admin::purge_archive`] removes it. Dedup
    /// follows the inbox's completion mode, as for archived rows: in `update` mode a
    /// redelivery of a discarded inbox message creates a new PENDING row (its dedup was
    /// the row itself); in `delete`/`archive` mode the inbox's dedup ledger still absorbs
    /// it.
    async fn discard(&self, filter: &MessageFilter, discard: &Discard) -> Result<u64, StoreError>;

    /// Deletes the rows of `box_kind`'s archive table archived before `older_than`
    /// (`archived_at`, compared as [`Admin::purge`] compares its horizon), archived
    /// completions and discarded rows alike, in batches. Then deletes the attempts of that
    /// box recorded before `older_than` whose row is neither in the box nor in its
    /// archive. Returns how many archived rows were deleted: exactly what [`Admin::count`]
    /// counts beforehand with `archived: true` and [`MessageFilter::archived_before`] =
    /// `older_than` for that box (rows archived meanwhile aside).
    async fn purge_archive(
        &self,
        box_kind: BoxKind,
        older_than: DateTime<Utc>,
    ) -> Result<u64, StoreError>;

    /// Every recorded failed attempt of message `id`, in every box and for every
    /// subscriber, oldest first: at most [`MAX_ATTEMPTS_KEPT`] per row (the latest). A
    /// store records an attempt in the same transaction as the failed outcome it belongs
    /// to (scheduled again: [`AttemptOutcome::Retried`]; FAILED, whatever the reason:
    /// [`AttemptOutcome::Failed`]); successful outcomes record nothing. Attempts outlive
    /// their row until a purge passes them: [`Admin::purge`], [`Admin::purge_archive`]
    /// and retention delete the attempts of their box recorded before their horizon whose
    /// row is neither in the box nor in its archive. Nothing else prunes them: in a box
    /// that completes in `delete` mode a row that failed once and then completed leaves
    /// its attempts behind, so without a retention on that box (or a periodic
    /// [`Admin::purge`], which in that mode deletes only such attempts)
    /// `message_attempts` keeps growing. Empty if none.
    async fn attempts(&self, id: MessageId) -> Result<Vec<AttemptView>, StoreError>;

    /// Per minute since `since` (truncated to the minute, UTC) and per box: the rows
    /// completed in that minute (`completed_at`; in the box and in its archive, so a box in
    /// `archive` completion mode counts too; a box in `delete` mode keeps no completed row
    /// to count), their lag (`completed_at − created_at`, longest and average), and the
    /// failed attempts recorded in that minute ([`Admin::attempts`]). Minutes with nothing
    /// are left out; entries by minute, then boxes in [`BoxKind::ALL`] order
    /// ([`merge_timeline`]). Refused when `since` is more than [`TIMELINE_WINDOW`] (24
    /// hours) ago ([`timeline_start`]), so it reads only recent index ranges.
    async fn timeline(&self, since: DateTime<Utc>) -> Result<Vec<MinuteStats>, StoreError>;

    /// Every subscription registered in the store (one entry per `subscriptions` row, by
    /// kind, subscriber, type and tenant), each with the processes that run its subscriber
    /// and refreshed within `live_for` (see
    /// [`subscriptions::live_for`](crate::subscriptions::live_for)), and its PENDING +
    /// PROCESSING and FAILED rows in the inbox of its kind (rows of its subscriber and type,
    /// and tenant when it has one). [`attendance`] judges them.
    async fn subscriptions(&self, live_for: Duration) -> Result<Vec<SubscriptionView>, StoreError>;

    /// Ends a subscription on purpose, in one transaction: deletes the `subscriptions` rows
    /// of `subscriber` (every type and tenant filter; of `kind`, or of both kinds) — the
    /// relay and reception stop creating rows for it — and the rows of its stopped
    /// processes, then settles its inbox rows of those kinds as `settle` says: its live
    /// rows (PENDING, and PROCESSING whose lease ran out) are deleted
    /// ([`Settle::Discard`], with its FAILED rows) or marked FAILED with
    /// [`kept_reason`] ([`Settle::Keep`]). COMPLETED rows are never touched, nor rows still
    /// under a lease (counted in [`RetireReport::in_flight`]). A process started later with
    /// that subscriber registers it again, as a new subscription.
    ///
    /// Refused, changing nothing, with a [`RetireRefused`] source: while a process that
    /// refreshed within `live_for` runs it; for a name no subscription nor live or FAILED
    /// inbox row has (suggesting a close one); for `bandeja.rejected` or an empty name.
    async fn retire(
        &self,
        kind: Option<crate::record::MessageKind>,
        subscriber: &str,
        settle: Settle,
        live_for: Duration,
    ) -> Result<RetireReport, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriber_filter_covers_only_the_inboxes() {
        let all = MessageFilter::default();
        assert_eq!(all.boxes(), BoxKind::ALL.to_vec());
        let subscriber = MessageFilter {
            subscriber: Some("inventory".into()),
            ..Default::default()
        };
        assert_eq!(
            subscriber.boxes(),
            vec![BoxKind::InboxEvents, BoxKind::InboxCommands]
        );
        let outbox_and_subscriber = MessageFilter {
            box_kind: Some(BoxKind::OutboxEvents),
            ..subscriber
        };
        assert!(outbox_and_subscriber.boxes().is_empty());
    }

    #[test]
    fn retry_and_replay_check_their_filters() {
        let status = |s| MessageFilter {
            status: Some(s),
            ..Default::default()
        };
        assert!(MessageFilter::default().check_retry().is_ok());
        assert!(status(MessageStatus::Failed).check_retry().is_ok());
        assert!(status(MessageStatus::Pending).check_retry().is_err());
        assert!(status(MessageStatus::Completed).check_replay().is_ok());
        assert!(status(MessageStatus::Failed).check_discard().is_ok());
        assert!(MessageFilter::default().check_discard().is_ok());
        assert!(status(MessageStatus::Pending).check_discard().is_err());
        let archived = MessageFilter {
            archived: true,
            ..Default::default()
        };
        let archived_before = MessageFilter {
            archived_before: Some(Utc::now()),
            ..Default::default()
        };
        for check in [
            MessageFilter::check_retry,
            MessageFilter::check_replay,
            MessageFilter::check_discard,
        ] {
            for filter in [&archived, &archived_before] {
                let err = check(filter).expect_err("archived rows are not changed");
                assert!(err.to_string().contains("archived rows"), "{err}");
            }
        }
        assert!(status(MessageStatus::Failed).check_replay().is_err());
        assert_eq!(
            MessageFilter::default().replay_boxes().expect("inboxes"),
            vec![BoxKind::InboxEvents, BoxKind::InboxCommands]
        );
        let outbox = MessageFilter {
            box_kind: Some(BoxKind::OutboxCommands),
            ..Default::default()
        };
        let err = outbox.check_replay().expect_err("outbox");
        assert_eq!(err.kind(), StoreErrorKind::Permanent);
        assert!(err.to_string().contains("outbox_commands"), "{err}");
    }

    #[test]
    fn archived_before_is_read_only_with_the_archive() {
        let now = Utc::now();
        let bound = |archived| MessageFilter {
            archived,
            archived_before: Some(now),
            ..Default::default()
        };
        assert!(bound(true).check_read().is_ok());
        assert!(MessageFilter::default().check_read().is_ok());
        let err = bound(false).check_read().expect_err("not archived");
        assert_eq!(err.kind(), StoreErrorKind::Permanent);
        assert!(err.to_string().contains("archived_before"), "{err}");
    }

    #[test]
    fn groups_fold_per_box_or_per_tenant() {
        let t0 = DateTime::<Utc>::from_timestamp(1_000, 0).expect("time");
        let t1 = DateTime::<Utc>::from_timestamp(2_000, 0).expect("time");
        let group = |tenant: &str, status, count, oldest, stuck| StatusGroup {
            tenant: tenant.into(),
            status,
            count,
            oldest_modified_at: oldest,
            stuck,
            taken_over: 0,
        };
        let taken = |group: StatusGroup, taken_over| StatusGroup {
            taken_over,
            ..group
        };
        let groups = [
            group("b", MessageStatus::Pending, 2, Some(t1), 1),
            taken(group("a", MessageStatus::Pending, 3, Some(t0), 2), 1),
            taken(group("a", MessageStatus::Processing, 1, Some(t0), 0), 1),
            taken(group("b", MessageStatus::Failed, 4, None, 0), 2),
            // Stores never count COMPLETED rows; were one to, it would not count.
            taken(group("b", MessageStatus::Completed, 9, None, 0), 9),
        ];
        let total = BoxCounters::fold(BoxKind::InboxEvents, false, &groups);
        assert_eq!(total.len(), 1);
        let t = &total[0];
        assert_eq!((t.pending, t.processing, t.failed, t.stuck), (5, 1, 4, 3));
        assert_eq!(t.taken_over, 4);
        assert_eq!(t.oldest_pending_at, Some(t0));
        let split = BoxCounters::fold(BoxKind::InboxEvents, true, &groups);
        let names: Vec<_> = split.iter().map(|c| c.tenant.clone()).collect();
        assert_eq!(names, vec![Some("a".into()), Some("b".into())]);
        assert_eq!((split[1].pending, split[1].failed), (2, 4));
        assert_eq!((split[0].taken_over, split[1].taken_over), (2, 2));
        assert_eq!(split[1].oldest_pending_at, Some(t1));
        assert!(BoxCounters::fold(BoxKind::InboxEvents, true, &[]).is_empty());
    }

    #[test]
    fn pages_are_capped() {
        let huge = Page {
            limit: usize::MAX,
            ..Page::default()
        };
        assert_eq!(huge.sql_limit(), 10_000);
        assert_eq!(
            archive_table(BoxKind::InboxCommands),
            "inbox_commands_archive"
        );
    }
}
