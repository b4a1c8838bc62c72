//! What the boxes remember of a message beyond its row: the failed attempts of each row
//! ([`AttemptView`], at most [`MAX_ATTEMPTS_KEPT`] per row), discards ([`Discard`]: who
//! moved a FAILED row into the archive, and why) and the per-minute activity of each box
//! ([`MinuteStats`], over at most [`TIMELINE_WINDOW`]).

use std::collections::BTreeMap;

use chrono::{DateTime, DurationRound, Utc};

use crate::error::{StoreError, StoreErrorKind};
use crate::record::BoxKind;

/// How many attempts a store keeps per row (per box, message id and subscriber): when a
/// row fails more often, its oldest attempts are deleted as new ones are recorded.
pub const MAX_ATTEMPTS_KEPT: usize = 20;

/// The longest span [`Admin::timeline`](super::Admin::timeline) covers: it refuses a
/// `since` further back than this (24 hours).
pub const TIMELINE_WINDOW: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// An operator's discard of FAILED rows ([`Admin::discard`](super::Admin::discard)):
/// recorded on each archived row as `discarded_by` and `discard_reason`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Discard {
    /// Who discarded the rows: an operator's name, or the caller an HTTP request came
    /// from (free text, stored as given).
    pub by: String,
    /// Why (free text, stored as given).
    pub reason: String,
}

/// How a failed attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AttemptOutcome {
    /// The row went back to PENDING, to be tried again after a backoff.
    Retried,
    /// The row went to FAILED: retries exhausted, a non-retriable error, or too many
    /// takeovers (`max-takeovers`).
    Failed,
}

impl AttemptOutcome {
    /// The column value: `RETRIED` or `FAILED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Retried => "RETRIED",
            AttemptOutcome::Failed => "FAILED",
        }
    }

    /// Reads a column value written by [`AttemptOutcome::as_str`].
    pub fn from_column(text: &str) -> Result<Self, StoreError> {
        match text {
            "RETRIED" => Ok(AttemptOutcome::Retried),
            "FAILED" => Ok(AttemptOutcome::Failed),
            other => Err(StoreError::new(
                StoreErrorKind::Permanent,
                "decode an attempt",
                format!("unknown attempt outcome `{other}`: expected RETRIED or FAILED"),
            )),
        }
    }
}

impl std::fmt::Display for AttemptOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One failed attempt of a row, as [`Admin::attempts`](super::Admin::attempts) returns it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AttemptView {
    /// The box of the row.
    #[serde(rename = "box")]
    pub box_kind: BoxKind,
    /// The subscriber of an inbox row (`None` for outbox rows).
    pub subscriber: Option<String>,
    /// Which attempt it was: the row's `retry_count + 1` when it failed (1 for the first
    /// attempt after the row was created or resubmitted). An attempt cut short by a
    /// transient conflict spends no retry, so the next one carries the same number.
    pub attempt: u32,
    /// Whether the row was scheduled again or FAILED.
    pub outcome: AttemptOutcome,
    /// The error, as written to `last_error`.
    pub error: String,
    /// When the outcome was written (the database clock).
    pub at: DateTime<Utc>,
    /// The worker that made the attempt (its `locked_by`).
    pub worker: Option<String>,
}

impl AttemptView {
    /// An attempt from the columns of the `message_attempts` table as the stores keep them:
    /// the box's table name, `''` for an outbox row's subscriber, the attempt number and
    /// the outcome's column text ([`AttemptOutcome::as_str`]). A value no store writes is
    /// a permanent error naming it.
    pub fn from_columns(
        table: &str,
        subscriber: String,
        attempt: i64,
        outcome: &str,
        error: String,
        at: DateTime<Utc>,
        worker: Option<String>,
    ) -> Result<AttemptView, StoreError> {
        let bad =
            |what: String| StoreError::new(StoreErrorKind::Permanent, "decode an attempt", what);
        Ok(AttemptView {
            box_kind: table.parse().map_err(|e| bad(format!("{e}")))?,
            subscriber: Some(subscriber).filter(|s| !s.is_empty()),
            attempt: u32::try_from(attempt)
                .map_err(|_| bad(format!("attempt out of range: {attempt}")))?,
            outcome: AttemptOutcome::from_column(outcome)?,
            error,
            at,
            worker,
        })
    }
}

/// The activity of one box in one minute, as [`Admin::timeline`](super::Admin::timeline)
/// returns it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MinuteStats {
    /// The start of the minute (UTC, whole minute).
    pub minute: DateTime<Utc>,
    /// Which box.
    #[serde(rename = "box")]
    pub box_kind: BoxKind,
    /// Rows completed in that minute (by `completed_at`).
    pub handled: u64,
    /// Failed attempts recorded in that minute (retried or FAILED).
    pub failed: u64,
    /// The longest `completed_at − created_at` among the rows completed in that minute,
    /// in seconds (0 when none completed).
    pub lag_max_seconds: f64,
    /// The average of the same, in seconds (0 when none completed).
    pub lag_avg_seconds: f64,
}

/// The start of the minute `since` falls in, once checked against [`TIMELINE_WINDOW`]:
/// what every store's [`Admin::timeline`](super::Admin::timeline) reads from. Refuses a
/// `since` more than 24 hours (plus one minute, for the truncation) before `now`.
pub fn timeline_start(
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, StoreError> {
    let earliest = now - TIMELINE_WINDOW - chrono::TimeDelta::minutes(1);
    if since < earliest {
        return Err(StoreError::new(
            StoreErrorKind::Permanent,
            "read the timeline",
            format!(
                "the timeline covers the last 24 hours at most; `since` = {} is earlier than {}: \
                 ask for a later start",
                since.to_rfc3339(),
                (now - TIMELINE_WINDOW).to_rfc3339()
            ),
        ));
    }
    Ok(since
        .duration_trunc(chrono::TimeDelta::minutes(1))
        .unwrap_or(since))
}

/// What a store counted for one (minute, box) of the timeline: the rows completed in that
/// minute and their lags, or the attempts recorded in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinuteCount {
    /// The start of the minute.
    pub minute: DateTime<Utc>,
    /// Which box.
    pub box_kind: BoxKind,
    /// How many rows (completions) or attempts.
    pub count: u64,
    /// Completions: the longest lag, in seconds (0 for attempts).
    pub lag_max_seconds: f64,
    /// Completions: the sum of the lags, in seconds (0 for attempts).
    pub lag_sum_seconds: f64,
}

/// Merges what a store counted into [`MinuteStats`], ordered by minute, then by box in
/// [`BoxKind::ALL`] order: `handled` from the completed rows (several counts of one
/// minute and box, from a box and its archive, add up), `failed` from the attempts. A
/// (minute, box) present in either gets one entry.
pub fn merge_timeline(handled: &[MinuteCount], failed: &[MinuteCount]) -> Vec<MinuteStats> {
    // Per (minute, box); `lag_avg_seconds` holds the sum of the lags until the end.
    let mut all: BTreeMap<(DateTime<Utc>, usize), MinuteStats> = BTreeMap::new();
    for c in handled {
        let stats = all
            .entry((c.minute, c.box_kind.index()))
            .or_insert_with(|| empty(c));
        stats.handled += c.count;
        stats.lag_max_seconds = stats.lag_max_seconds.max(c.lag_max_seconds);
        stats.lag_avg_seconds += c.lag_sum_seconds;
    }
    for c in failed {
        all.entry((c.minute, c.box_kind.index()))
            .or_insert_with(|| empty(c))
            .failed += c.count;
    }
    all.into_values()
        .map(|mut stats| {
            stats.lag_avg_seconds = match stats.handled {
                0 => 0.0,
                // Counts of one minute stay far below 2^52: the conversion is exact.
                n => stats.lag_avg_seconds / n as f64,
            };
            stats
        })
        .collect()
}

fn empty(c: &MinuteCount) -> MinuteStats {
    MinuteStats {
        minute: c.minute,
        box_kind: c.box_kind,
        handled: 0,
        failed: 0,
        lag_max_seconds: 0.0,
        lag_avg_seconds: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_700_000_000 / 60 * 60 + minute * 60, 0).expect("time")
    }

    #[test]
    fn the_timeline_merges_completions_and_attempts_per_minute_and_box() {
        let done = |minute, box_kind, count, max, sum| MinuteCount {
            minute: at(minute),
            box_kind,
            count,
            lag_max_seconds: max,
            lag_sum_seconds: sum,
        };
        let handled = [
            done(1, BoxKind::InboxEvents, 2, 3.0, 4.0),
            // The archive of the same box, same minute: adds up.
            done(1, BoxKind::InboxEvents, 2, 5.0, 4.0),
            done(0, BoxKind::OutboxEvents, 1, 1.0, 1.0),
        ];
        let failed = [
            done(1, BoxKind::OutboxEvents, 3, 0.0, 0.0),
            done(2, BoxKind::InboxEvents, 1, 0.0, 0.0),
        ];
        let stats = merge_timeline(&handled, &failed);
        let keys: Vec<_> = stats.iter().map(|s| (s.minute, s.box_kind)).collect();
        assert_eq!(
            keys,
            vec![
                (at(0), BoxKind::OutboxEvents),
                (at(1), BoxKind::OutboxEvents),
                (at(1), BoxKind::InboxEvents),
                (at(2), BoxKind::InboxEvents),
            ]
        );
        assert_eq!((stats[1].handled, stats[1].failed), (0, 3));
        assert_eq!(stats[1].lag_avg_seconds, 0.0);
        assert_eq!((stats[2].handled, stats[2].failed), (4, 0));
        assert_eq!(
            (stats[2].lag_max_seconds, stats[2].lag_avg_seconds),
            (5.0, 2.0)
        );
    }

    #[test]
    fn the_timeline_starts_on_a_whole_minute_within_a_day() {
        let now = at(10) + chrono::TimeDelta::seconds(17);
        assert_eq!(timeline_start(now, now).expect("now"), at(10));
        let day_ago = now - TIMELINE_WINDOW;
        assert!(timeline_start(day_ago, now).is_ok());
        let err = timeline_start(day_ago - chrono::TimeDelta::hours(1), now).expect_err("old");
        assert_eq!(err.kind(), StoreErrorKind::Permanent);
        assert!(err.to_string().contains("24 hours"), "{err}");
    }

    #[test]
    fn attempt_outcomes_round_trip_their_column_text() {
        for outcome in [AttemptOutcome::Retried, AttemptOutcome::Failed] {
            assert_eq!(
                AttemptOutcome::from_column(outcome.as_str()).ok(),
                Some(outcome)
            );
        }
        assert!(AttemptOutcome::from_column("PENDING").is_err());
        assert_eq!(
            serde_json::to_string(&AttemptOutcome::Retried).expect("json"),
            "\"RETRIED\""
        );
    }
}
