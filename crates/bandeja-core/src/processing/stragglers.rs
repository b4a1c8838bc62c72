//! Keeping a slow or hung handler from holding up the other messages of its process.
//!
//! A handler may take as long as its time limit (by default up to the lease, 20 s). Three
//! things keep the other keys and tenants moving meanwhile, each after the *patience*: one
//! backoff (`retry-backoff-initial`), at least [`MIN_PATIENCE`]:
//!
//! - in a batched transaction, a handler still running after the patience (a batch
//!   handler: the patience once per message it carries) is stopped (its savepoint rolled
//!   back: none of its work commits), the rest of the batch commits without it, and it runs
//!   again at once in a transaction of its own, with its full time limit and without
//!   spending a retry. Its subscriber is then remembered as slow for [`SLOW_MEMORY`]: its
//!   messages run in their own transactions from the start, so a handler that is slow by
//!   nature is stopped and run again once a minute, not each time; and a subscriber with a
//!   single poison message that hangs goes back to batches a minute later (its retries run
//!   alone anyway, as every retry does).
//! - the inbox worker keeps claiming while a cycle waits only for stragglers: a cycle older
//!   than the patience with every row started is left to finish in the background (up to
//!   [`MAX_LANES`] cycles at once), under its own lease, released on shutdown.
//! - the handlers of every cycle of a box share one set of permits (the handler
//!   concurrency), so cycles running side by side never run more handlers at once than one
//!   cycle would.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::config::WorkerConfig;
use crate::record::{BoxKind, MessageKind};

/// The shortest patience, whatever `retry-backoff-initial` says: stopping a handler and
/// running it again costs its work so far, so it is done only to handlers that are slow by
/// any measure.
pub(crate) const MIN_PATIENCE: Duration = Duration::from_secs(1);

/// How long a subscriber stays known as slow after its handler was last set aside.
pub(crate) const SLOW_MEMORY: Duration = Duration::from_secs(60);

/// Cycles of one inbox that may run at once in a process: one claiming, the others
/// finishing stragglers.
pub(crate) const MAX_LANES: usize = 4;

/// How long other messages may wait for a handler: `retry-backoff-initial`, at least
/// [`MIN_PATIENCE`], at most half the lease (a cycle detached after it still has half its
/// lease to finish in).
pub(crate) fn patience(config: &WorkerConfig) -> Duration {
    config
        .retry_backoff_initial
        .max(MIN_PATIENCE)
        .min(config.lock_at_most_for / 2)
}

/// The subscribers whose handlers were recently set aside, by inbox.
#[derive(Default)]
pub(crate) struct SlowSubscribers {
    /// Whether any subscriber was ever marked: the common case reads no lock.
    any: AtomicBool,
    /// When each subscriber was last set aside, for the event inbox and the command inbox
    /// (keyed by name alone, so a lookup needs no allocation).
    last_slow: Mutex<[HashMap<String, Instant>; 2]>,
}

/// The index of `box_kind`'s inbox in per-inbox pairs.
fn inbox_index(box_kind: BoxKind) -> usize {
    match box_kind.kind() {
        MessageKind::Event => 0,
        MessageKind::Command => 1,
    }
}

impl SlowSubscribers {
    /// Remembers that `subscriber`'s handler was just set aside.
    pub(crate) fn mark(&self, box_kind: BoxKind, subscriber: Option<&str>) {
        let Some(subscriber) = subscriber else {
            return;
        };
        if let Ok(mut last_slow) = self.last_slow.lock() {
            let inbox = &mut last_slow[inbox_index(box_kind)];
            // Entries older than the memory are dropped as new ones come: the map holds
            // at most the subscribers slow in the last minute.
            inbox.retain(|_, at| at.elapsed() < SLOW_MEMORY);
            inbox.insert(subscriber.to_owned(), Instant::now());
            self.any.store(true, Ordering::Release);
        }
    }

    /// Whether `subscriber`'s handler was set aside within [`SLOW_MEMORY`].
    pub(crate) fn is_slow(&self, box_kind: BoxKind, subscriber: Option<&str>) -> bool {
        let Some(subscriber) = subscriber else {
            return false;
        };
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        self.last_slow.lock().is_ok_and(|last_slow| {
            last_slow[inbox_index(box_kind)]
                .get(subscriber)
                .is_some_and(|at| at.elapsed() < SLOW_MEMORY)
        })
    }
}

/// The handler permits of the two inboxes, shared by all their cycles.
pub(crate) struct Permits {
    /// The event inbox's, then the command inbox's.
    inboxes: [Semaphore; 2],
}

impl Permits {
    /// `concurrency` handlers (or batch transactions) at once per inbox.
    pub(crate) fn new(concurrency: usize) -> Self {
        let concurrency = concurrency.clamp(1, Semaphore::MAX_PERMITS);
        Permits {
            inboxes: [Semaphore::new(concurrency), Semaphore::new(concurrency)],
        }
    }

    /// The permits of the inbox of `box_kind`'s kind.
    pub(crate) fn of(&self, box_kind: BoxKind) -> &Semaphore {
        &self.inboxes[inbox_index(box_kind)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patience_is_one_backoff_within_bounds() {
        let config = WorkerConfig::events_inbox_defaults();
        assert_eq!(patience(&config), Duration::from_secs(1));
        let quick = config
            .clone()
            .retry_backoff_initial(Duration::from_millis(10));
        assert_eq!(patience(&quick), MIN_PATIENCE);
        let slow = config
            .clone()
            .retry_backoff_initial(Duration::from_secs(60));
        assert_eq!(patience(&slow), Duration::from_secs(10), "half the lease");
    }

    #[test]
    fn slow_subscribers_are_remembered_per_inbox() {
        let slow = SlowSubscribers::default();
        assert!(!slow.is_slow(BoxKind::InboxEvents, Some("mail")));
        slow.mark(BoxKind::InboxEvents, Some("mail"));
        assert!(slow.is_slow(BoxKind::InboxEvents, Some("mail")));
        assert!(!slow.is_slow(BoxKind::InboxCommands, Some("mail")));
        assert!(!slow.is_slow(BoxKind::InboxEvents, Some("billing")));
        assert!(!slow.is_slow(BoxKind::InboxEvents, None));
    }
}
