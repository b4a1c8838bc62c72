//! Keeping a slow or hung handler from holding up the other messages of its process.
//!
//! A handler may take as long as its time limit (`handler-timeout`, PT5M by default; the
//! lease is renewed meanwhile), and no handler is stopped before it. Three things keep the
//! other keys and tenants moving meanwhile, each after the *patience*: one backoff
//! (`retry-backoff-initial`), at least [`MIN_PATIENCE`]:
//!
//! - slow subscribers do not run batched at all (see [`pace`](crate::pace)),
//!   and a batched chunk whose next handler has not started after the patience (the one
//!   running turned out slow) hands the rest of its messages over to run alone beside it;
//! - the inbox worker keeps claiming while a cycle waits only for stragglers: a cycle older
//!   than the patience with every row started is left to finish in the background (up to
//!   [`MAX_LANES`] cycles at once), under its own renewed lease, released on shutdown;
//! - the handlers of every cycle of a box share one set of permits (the handler
//!   concurrency), so cycles running side by side never run more handlers at once than one
//!   cycle would.

use std::time::Duration;

use tokio::sync::Semaphore;

use crate::config::WorkerConfig;
use crate::record::{BoxKind, MessageKind};

/// The shortest patience, whatever `retry-backoff-initial` says.
pub(crate) const MIN_PATIENCE: Duration = Duration::from_secs(1);

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

/// The index of `box_kind`'s inbox in per-inbox pairs.
pub(crate) fn inbox_index(box_kind: BoxKind) -> usize {
    match box_kind.kind() {
        MessageKind::Event => 0,
        MessageKind::Command => 1,
    }
}

/// The handler permits of the two inboxes, shared by all their cycles.
pub(crate) struct Permits {
    /// The event inbox's, then the command inbox's.
    inboxes: [Semaphore; 2],
    /// Permits of each inbox.
    capacity: usize,
}

impl Permits {
    /// `concurrency` handlers (or batch transactions) at once per inbox.
    pub(crate) fn new(concurrency: usize) -> Self {
        let concurrency = concurrency.clamp(1, Semaphore::MAX_PERMITS);
        Permits {
            inboxes: [Semaphore::new(concurrency), Semaphore::new(concurrency)],
            capacity: concurrency,
        }
    }

    /// How many handlers (or batch transactions) of one inbox run at once.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
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
}
