//! [`OutboxReplay`]: which COMPLETED outbox rows [`Admin::replay_outbox`](super::Admin::replay_outbox)
//! sends again, and [`ReplayRefused`], why a replay was refused before anything changed.
//!
//! Re-sending is safe because every receiver deduplicates: with the in-process transport
//! the relay inserts one inbox row per subscriber with dedup on `(id, subscriber)` (an
//! existing row only counts one more delivery), so only the subscribers that lack the
//! message get a row — which is how a new subscriber is backfilled. Over a broker the
//! receiving inbox deduplicates the same way.

use crate::error::{StoreError, StoreErrorKind};
use crate::record::BoxKind;
use crate::status::MessageStatus;

use super::MessageFilter;

/// The operation name outbox replay errors carry.
const OPERATION: &str = "replay the outbox";

/// Which COMPLETED outbox rows to send again.
///
/// The rows are chosen by [`filter`](OutboxReplay::filter): `box_kind` (one outbox, or
/// `None` for both), `tenant`, `message_type`, `id`, `since`/`until` and
/// `completed_before`. `since`/`until` bound `created_at`, the time the message was
/// written to the outbox (emitted), as everywhere else in the `Admin` filters: "replay
/// what was emitted yesterday" is `since` yesterday 00:00, `until` today 00:00. The
/// filter's `status`, if set, must be COMPLETED; `subscriber` must not be set (outbox rows
/// have no subscriber).
///
/// A replay that narrows nothing (no tenant, type, id or time bound; choosing one of the
/// two outboxes does not count) would send every message ever emitted again: it is
/// refused unless [`all`](OutboxReplay::all) says so.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboxReplay {
    /// The rows.
    pub filter: MessageFilter,
    /// Replay every COMPLETED row the filter covers even though it narrows nothing
    /// (`bandeja replay --outbox --all`, `all=true` over HTTP).
    pub all: bool,
}

/// Why an outbox replay was refused; nothing changed. The source of the [`StoreError`]
/// that [`Admin::replay_outbox`](super::Admin::replay_outbox) and
/// [`Admin::count_outbox_replay`](super::Admin::count_outbox_replay) return, so callers
/// can tell a bad request ([`ReplayRefused::is_bad_filter`]) from a box that keeps nothing
/// to replay, with `error.get_ref().downcast_ref::<ReplayRefused>()`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayRefused {
    /// The filter narrows nothing and `all` is not set.
    #[error(
        "an outbox replay without a filter would send every message this service ever \
         emitted again: narrow it by type, time window (since/until), id or tenant, or ask \
         for all of them explicitly (`bandeja replay --outbox --all`, `all=true` over HTTP)"
    )]
    NotNarrowed,
    /// The filter asks for another status.
    #[error(
        "outbox replay re-sends COMPLETED rows only; the filter asks for {0} rows \
         (to send FAILED outbox rows again, retry them)"
    )]
    Status(MessageStatus),
    /// The filter names an inbox.
    #[error(
        "outbox replay applies to the outboxes (outbox_events, outbox_commands), not {0}: \
         to run handlers again on rows they already handled, replay the inbox instead"
    )]
    Inbox(BoxKind),
    /// The filter names a subscriber.
    #[error(
        "outbox rows have no subscriber, so a subscriber filter cannot choose them: replay \
         the outbox by type, time window or id (the subscribers that lack a message get it, \
         the others absorb it), or replay that subscriber's inbox rows instead"
    )]
    Subscriber,
    /// The filter asks for the archive tables ([`MessageFilter::archived`]).
    #[error(
        "outbox replay reads the archive tables itself (an archived row whose id the box \
         does not hold is moved back and sent again): drop the archive filter"
    )]
    Archived,
    /// The box completes in `delete` mode: no COMPLETED row is kept.
    #[error(
        "{0} completes in `delete` mode: a row is deleted as soon as it is sent, so there is \
         no COMPLETED row to replay. Emit the messages again, or set its completion-mode to \
         `update` or `archive` so that rows sent from then on can be replayed"
    )]
    DeleteMode(BoxKind),
}

impl ReplayRefused {
    /// Whether the request itself is wrong (a filter the operation cannot serve), as
    /// opposed to a box that keeps nothing to replay.
    pub fn is_bad_filter(&self) -> bool {
        !matches!(self, ReplayRefused::DeleteMode(_))
    }

    /// As a [`StoreError`] (kind `Permanent`: asking again the same way cannot succeed).
    pub fn into_error(self) -> StoreError {
        StoreError::new(StoreErrorKind::Permanent, OPERATION, self)
    }

    /// The refusal inside `error`, if it is one.
    pub fn of(error: &StoreError) -> Option<&ReplayRefused> {
        error.get_ref().downcast_ref::<ReplayRefused>()
    }
}

impl OutboxReplay {
    /// A replay of the rows `filter` chooses (refused if it narrows nothing).
    pub fn new(filter: MessageFilter) -> Self {
        OutboxReplay { filter, all: false }
    }

    /// A replay of every COMPLETED row `filter` covers, narrowed or not.
    pub fn everything(filter: MessageFilter) -> Self {
        OutboxReplay { filter, all: true }
    }

    /// Whether the filter narrows the rows beyond choosing an outbox.
    pub fn narrows(&self) -> bool {
        let f = &self.filter;
        f.tenant.is_some()
            || f.message_type.is_some()
            || f.id.is_some()
            || f.since.is_some()
            || f.until.is_some()
            || f.completed_before.is_some()
            || f.correlation_id.is_some()
    }

    /// Checks that the replay can be served: a COMPLETED (or unset) status, no inbox, no
    /// subscriber, and a narrowing filter unless `all`.
    pub fn check(&self) -> Result<(), StoreError> {
        self.refusal().map_or(Ok(()), |r| Err(r.into_error()))
    }

    fn refusal(&self) -> Option<ReplayRefused> {
        let f = &self.filter;
        // `archived_before` bounds `archived_at`, which the boxes lack; the replay reads the
        // archive tables itself.
        if f.archived || f.archived_before.is_some() {
            return Some(ReplayRefused::Archived);
        }
        if let Some(other) = f.status.filter(|s| *s != MessageStatus::Completed) {
            return Some(ReplayRefused::Status(other));
        }
        if let Some(inbox) = f.box_kind.filter(|b| b.is_inbox()) {
            return Some(ReplayRefused::Inbox(inbox));
        }
        if f.subscriber.is_some() {
            return Some(ReplayRefused::Subscriber);
        }
        if !self.all && !self.narrows() {
            return Some(ReplayRefused::NotNarrowed);
        }
        None
    }

    /// The outboxes the replay changes, in [`BoxKind::ALL`] order, once
    /// [`OutboxReplay::check`] passed.
    pub fn boxes(&self) -> Result<Vec<BoxKind>, StoreError> {
        self.check()?;
        Ok(BoxKind::ALL
            .into_iter()
            .filter(|b| !b.is_inbox())
            .filter(|b| self.filter.box_kind.is_none_or(|wanted| wanted == *b))
            .collect())
    }

    /// [`OutboxReplay::boxes`], refused when one of them completes in `delete` mode (its
    /// COMPLETED rows are gone): `mode_of` says how each box completes in the store.
    pub fn boxes_in(
        &self,
        mode_of: impl Fn(BoxKind) -> crate::config::CompletionMode,
    ) -> Result<Vec<BoxKind>, StoreError> {
        let boxes = self.boxes()?;
        match boxes
            .iter()
            .find(|b| mode_of(**b) == crate::config::CompletionMode::Delete)
        {
            Some(b) => Err(ReplayRefused::DeleteMode(*b).into_error()),
            None => Ok(boxes),
        }
    }

    /// The same replay restricted to `box_kind` (to count box by box).
    pub fn in_box(&self, box_kind: BoxKind) -> OutboxReplay {
        OutboxReplay {
            filter: MessageFilter {
                box_kind: Some(box_kind),
                ..self.filter.clone()
            },
            all: self.all,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(replay: &OutboxReplay) -> ReplayRefused {
        let err = replay.check().expect_err("refused");
        assert_eq!(err.kind(), StoreErrorKind::Permanent);
        ReplayRefused::of(&err).cloned().expect("a refusal")
    }

    #[test]
    fn a_replay_must_narrow_or_say_all() {
        let bare = OutboxReplay::default();
        assert_eq!(refused(&bare), ReplayRefused::NotNarrowed);
        let one_box = OutboxReplay::new(MessageFilter {
            box_kind: Some(BoxKind::OutboxEvents),
            ..Default::default()
        });
        assert_eq!(
            refused(&one_box),
            ReplayRefused::NotNarrowed,
            "a box is no narrowing"
        );
        assert!(refused(&bare).to_string().contains("--all"));
        assert_eq!(
            OutboxReplay::everything(MessageFilter::default())
                .boxes()
                .expect("all"),
            vec![BoxKind::OutboxEvents, BoxKind::OutboxCommands]
        );
        let typed = OutboxReplay::new(MessageFilter {
            message_type: Some("shop.OrderPlaced".into()),
            box_kind: Some(BoxKind::OutboxCommands),
            ..Default::default()
        });
        assert_eq!(typed.boxes().expect("typed"), vec![BoxKind::OutboxCommands]);
        assert_eq!(
            typed.in_box(BoxKind::OutboxEvents).filter.box_kind,
            Some(BoxKind::OutboxEvents)
        );
    }

    #[test]
    fn filters_the_outbox_cannot_serve_are_refused_with_the_reason() {
        let with = |filter: MessageFilter| OutboxReplay::everything(filter);
        let failed = with(MessageFilter {
            status: Some(MessageStatus::Failed),
            ..Default::default()
        });
        assert_eq!(
            refused(&failed),
            ReplayRefused::Status(MessageStatus::Failed)
        );
        let inbox = with(MessageFilter {
            box_kind: Some(BoxKind::InboxEvents),
            ..Default::default()
        });
        assert!(refused(&inbox).to_string().contains("inbox_events"));
        let subscriber = with(MessageFilter {
            subscriber: Some("billing".into()),
            ..Default::default()
        });
        let reason = refused(&subscriber);
        assert_eq!(reason, ReplayRefused::Subscriber);
        assert!(reason.is_bad_filter());
        assert!(reason.to_string().contains("no subscriber"), "{reason}");
        let delete = ReplayRefused::DeleteMode(BoxKind::OutboxEvents);
        assert!(!delete.is_bad_filter());
        assert!(delete.to_string().contains("`delete` mode"), "{delete}");
        let completed = with(MessageFilter {
            status: Some(MessageStatus::Completed),
            ..Default::default()
        });
        assert!(completed.check().is_ok());
    }
}
