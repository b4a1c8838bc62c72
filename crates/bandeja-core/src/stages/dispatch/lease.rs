//! The lease of a claimed outbox batch, as the dispatcher sees it, and the publish window
//! it leaves.
//!
//! A claim holds its rows until `locked_until = now + lock-at-most-for` on the database's
//! clock. The dispatcher measures the claim's start on its own monotonic clock *before*
//! sending the claim, so its idea of the lease never ends later than the database's. A
//! publish gets a timeout of `min(handler-timeout, lock-at-most-for / 2)` and starts only
//! if that timeout plus a fifth of the lease (kept for writing the outcomes) is still left;
//! otherwise the rows are released unpublished. So every publish ends, acknowledged or
//! not, while the rows are still this worker's: no other worker can claim a row whose
//! publish is in flight, and an outbox lease never needs renewing.

use std::time::Duration;

use tokio::time::Instant;

use crate::config::WorkerConfig;

/// The share of the lease kept for writing the outcomes after a publish (1/5).
const WRITE_SHARE: u32 = 5;

/// The extra time the dispatcher gives a transport past the publish deadline before it
/// stops waiting for the call (1/20 of the lease, inside the share kept for writing).
const GRACE_SHARE: u32 = 20;

/// When a batch was claimed and for how long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lease {
    /// Taken just before the claim statement was sent.
    pub(crate) claimed_at: Instant,
    /// `lock-at-most-for`.
    pub(crate) length: Duration,
}

/// A claimed batch whose lease leaves too little time for a publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the lease of a claimed outbox batch has {left:?} left and a publish needs {needed:?} (its timeout plus time to record the outcome): the rows were released without being published; if this repeats the database answers claims slowly — check it, or raise `lock-at-most-for`")]
pub(crate) struct LeaseTooShort {
    /// What was left of the lease.
    pub(crate) left: Duration,
    /// What a publish needs.
    pub(crate) needed: Duration,
}

/// The timeout of one publish: `min(handler-timeout, lock-at-most-for / 2)`.
pub(crate) fn publish_timeout(config: &WorkerConfig) -> Duration {
    config.handler_timeout.min(config.lock_at_most_for / 2)
}

impl Lease {
    /// A lease of `config`'s `lock-at-most-for`, claimed now (call it before claiming).
    pub(crate) fn starting_now(config: &WorkerConfig) -> Lease {
        Lease {
            claimed_at: Instant::now(),
            length: config.lock_at_most_for,
        }
    }

    /// The deadline of a publish of `timeout` starting at `now`, or why it must not start.
    pub(crate) fn publish_deadline(
        &self,
        timeout: Duration,
        now: Instant,
    ) -> Result<Instant, LeaseTooShort> {
        let left = (self.claimed_at + self.length).saturating_duration_since(now);
        let needed = timeout + self.length / WRITE_SHARE;
        if left < needed {
            return Err(LeaseTooShort { left, needed });
        }
        Ok(now + timeout)
    }

    /// How long past the publish deadline the dispatcher still waits for the transport's
    /// answer before counting the whole call unavailable.
    pub(crate) fn grace(&self) -> Duration {
        self.length / GRACE_SHARE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(lease: u64, handler_timeout: u64) -> WorkerConfig {
        let mut config = crate::config::Config::default().events_outbox;
        config.lock_at_most_for = Duration::from_secs(lease);
        config.handler_timeout = Duration::from_secs(handler_timeout);
        config
    }

    #[test]
    fn a_publish_waits_half_the_lease_at_most() {
        assert_eq!(publish_timeout(&config(30, 300)), Duration::from_secs(15));
        assert_eq!(publish_timeout(&config(30, 4)), Duration::from_secs(4));
    }

    #[test]
    fn a_publish_starts_only_when_it_and_the_write_fit_in_what_is_left() {
        let config = config(30, 300);
        let lease = Lease::starting_now(&config);
        let timeout = publish_timeout(&config);
        let at = |secs: u64| lease.claimed_at + Duration::from_secs(secs);
        assert_eq!(lease.publish_deadline(timeout, at(0)), Ok(at(15)));
        assert_eq!(lease.publish_deadline(timeout, at(9)), Ok(at(24)));
        let late = lease
            .publish_deadline(timeout, at(10))
            .expect_err("too late");
        assert_eq!(late.left, Duration::from_secs(20));
        assert_eq!(late.needed, Duration::from_secs(21));
        let expired = lease
            .publish_deadline(timeout, at(40))
            .expect_err("expired");
        assert_eq!(expired.left, Duration::ZERO);
        assert!(
            expired.to_string().contains("lock-at-most-for"),
            "{expired}"
        );
        // The deadline plus the grace stays inside the lease.
        let deadline = lease.publish_deadline(timeout, at(9)).expect("in time");
        assert!(deadline + lease.grace() < lease.claimed_at + lease.length);
    }
}
