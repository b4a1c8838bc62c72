//! How long each subscriber's handler takes, measured, and the batching rule drawn from it.
//!
//! A batched transaction runs its handlers one after another and commits once: it saves a
//! commit per message, which is worth it only when a commit costs as much as the handler
//! itself. So, per inbox and subscriber, the worker keeps a moving average of the handler's
//! time per message (each call weighs [`WEIGHT`]):
//!
//! - a subscriber runs **batched** only once [`WARM_UP`] calls were measured and its
//!   average is at most [`BATCH_AT_MOST`] (PT0.01S);
//! - every other subscriber (new, slow, or slow lately: one call of a second lifts the
//!   average far above the bound at once) runs **one message per transaction**, with the
//!   full handler concurrency;
//! - a batched chunk holds at most [`CHUNK_BUDGET`] of measured handler time.
//!
//! No handler is ever stopped for being slow: only its own time limit stops it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::record::BoxKind;
use crate::stragglers::inbox_index;

/// Calls measured before a subscriber may run batched.
pub(crate) const WARM_UP: u32 = 8;

/// The largest average handler time per message of a batched subscriber.
pub(crate) const BATCH_AT_MOST: Duration = Duration::from_millis(10);

/// The measured handler time one batched chunk holds at most.
pub(crate) const CHUNK_BUDGET: Duration = Duration::from_millis(500);

/// The measured handler time one batched chunk holds at most on a single-writer store
/// (SQLite): the chunk holds the database's one write lock from its first write to its
/// commit, and the application's own transactions wait for it meanwhile.
pub(crate) const SINGLE_WRITER_CHUNK_BUDGET: Duration = Duration::from_millis(20);

/// The weight of the newest call in the moving average.
pub(crate) const WEIGHT: f64 = 0.2;

#[derive(Clone, Copy)]
struct Measured {
    calls: u32,
    /// Seconds per message, moving average.
    average: f64,
    /// When it was last measured.
    last: std::time::Instant,
}

/// How long a measurement counts for [`Pace::any_batched`]: a fast subscriber that has
/// not run for this long no longer keeps its inbox claiming full batches.
const RECENT: Duration = Duration::from_secs(60);

/// The measured handler times of the two inboxes, by subscriber.
#[derive(Default)]
pub(crate) struct Pace {
    inboxes: Mutex<[HashMap<String, Measured>; 2]>,
}

impl Pace {
    /// Records one handler call of `subscriber` that took `took` for `messages` messages.
    pub(crate) fn record(
        &self,
        box_kind: BoxKind,
        subscriber: Option<&str>,
        took: Duration,
        messages: usize,
    ) {
        let Some(subscriber) = subscriber else {
            return;
        };
        let per_message =
            took.as_secs_f64() / f64::from(u32::try_from(messages.max(1)).unwrap_or(u32::MAX));
        let Ok(mut inboxes) = self.inboxes.lock() else {
            return;
        };
        let inbox = &mut inboxes[inbox_index(box_kind)];
        match inbox.get_mut(subscriber) {
            Some(measured) => {
                measured.calls = measured.calls.saturating_add(1);
                measured.average += WEIGHT * (per_message - measured.average);
                measured.last = std::time::Instant::now();
            }
            None => {
                inbox.insert(
                    subscriber.to_owned(),
                    Measured {
                        calls: 1,
                        average: per_message,
                        last: std::time::Instant::now(),
                    },
                );
            }
        }
    }

    /// The measured time per message of `subscriber` if it runs batched (see the rule
    /// above), `None` if it runs one message per transaction.
    pub(crate) fn batched(&self, box_kind: BoxKind, subscriber: Option<&str>) -> Option<Duration> {
        let subscriber = subscriber?;
        let inboxes = self.inboxes.lock().ok()?;
        let measured = inboxes[inbox_index(box_kind)].get(subscriber)?;
        let average = Duration::from_secs_f64(measured.average.max(0.0));
        (measured.calls >= WARM_UP && average <= BATCH_AT_MOST).then_some(average)
    }
}

impl Pace {
    /// Whether any subscriber of `box_kind`'s inbox is measured fast (fast enough to run
    /// batched) and ran within the last minute. When none is, an inbox claims no more rows than it has free handler
    /// permits: a row claimed only to wait for a permit is a row another process could be
    /// handling.
    pub(crate) fn any_batched(&self, box_kind: BoxKind) -> bool {
        self.inboxes.lock().is_ok_and(|inboxes| {
            inboxes[inbox_index(box_kind)].values().any(|measured| {
                measured.calls >= WARM_UP
                    && measured.average <= BATCH_AT_MOST.as_secs_f64()
                    && measured.last.elapsed() < RECENT
            })
        })
    }
}

/// How many messages one batched chunk takes when the slowest handler in it averages
/// `slowest` per message: its measured time stays within [`CHUNK_BUDGET`], or
/// [`SINGLE_WRITER_CHUNK_BUDGET`] on a `single_writer` store.
pub(crate) fn chunk_limit(slowest: Duration, single_writer: bool) -> usize {
    if slowest.is_zero() {
        return usize::MAX;
    }
    let budget = if single_writer {
        SINGLE_WRITER_CHUNK_BUDGET
    } else {
        CHUNK_BUDGET
    };
    let fits = budget.as_secs_f64() / slowest.as_secs_f64();
    if fits >= 1_000_000.0 {
        1_000_000
    } else {
        // Within 1..=1_000_000: the cast cannot truncate.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = fits as usize;
        n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn only_measured_fast_subscribers_run_batched() {
        let pace = Pace::default();
        let inbox = BoxKind::InboxEvents;
        for _ in 0..WARM_UP - 1 {
            pace.record(inbox, Some("fast"), MS, 1);
        }
        assert_eq!(pace.batched(inbox, Some("fast")), None, "still warming up");
        pace.record(inbox, Some("fast"), MS, 1);
        assert!(pace.batched(inbox, Some("fast")).is_some());
        assert_eq!(pace.batched(BoxKind::InboxCommands, Some("fast")), None);
        pace.record(inbox, Some("fast"), Duration::from_millis(500), 1);
        assert_eq!(
            pace.batched(inbox, Some("fast")),
            None,
            "one slow call ends the batching at once"
        );
        for _ in 0..WARM_UP * 3 {
            pace.record(inbox, Some("slow"), Duration::from_millis(300), 1);
        }
        assert_eq!(pace.batched(inbox, Some("slow")), None);
        pace.record(inbox, Some("batch"), Duration::from_millis(40), 10);
        assert_eq!(pace.batched(inbox, None), None);
    }

    #[test]
    fn a_chunk_holds_its_time_budget() {
        assert_eq!(chunk_limit(Duration::from_millis(10), false), 50);
        assert_eq!(chunk_limit(Duration::ZERO, false), usize::MAX);
        assert_eq!(chunk_limit(Duration::from_secs(5), false), 1);
        assert_eq!(chunk_limit(Duration::from_millis(1), true), 20);
        assert_eq!(chunk_limit(Duration::from_millis(10), true), 2);
    }
}
