//! The lease of the rows one cycle holds (`lock-at-most-for`), as the cycle knows it.
//!
//! A claim gives its rows a lease; while their work is in flight the cycle renews it every
//! third of the lease, in one statement for every row it still holds ([`Store::renew`]).
//! The cycle's clock is conservative: the lease is known to hold until the moment the last
//! successful renewal (or the claim) was *sent*, plus the lease. From that:
//!
//! - work starts only while at least a third of the lease is left ([`Lease::may_start`]):
//!   with renewals working the lease never drops below two thirds, so less means renewals
//!   are failing (the database is unreachable) and the row is released instead; and only
//!   on a row the last renewal renewed: a row it left out is no longer this worker's
//!   (another took it over while renewals were failing), and is never started;
//! - a handler still running when the lease is about to run out unrenewed
//!   ([`Lease::running_out`]) is stopped and its row released, before another worker can
//!   take it over: a handler never runs past its lease;
//! - a completion is written only while the lease holds ([`Lease::holds`]).

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::envelope::MessageId;
use crate::record::{BoxKind, StoredMessage};
use crate::store::Store;

/// A row of a box: its message id and, in an inbox, its subscriber.
type RowId = (MessageId, Option<String>);

/// The lease of one cycle's rows.
pub(crate) struct Lease {
    length: Duration,
    /// Until when the lease surely holds.
    until: watch::Sender<Instant>,
    /// The rows the last renewal renewed; `None` before the first: every row claimed.
    held: Mutex<Option<HashSet<RowId>>>,
}

impl Lease {
    /// The lease of rows claimed by a statement sent at `claimed_at`.
    pub(crate) fn new(length: Duration, claimed_at: Instant) -> Self {
        Lease {
            length,
            until: watch::Sender::new(claimed_at + length),
            held: Mutex::new(None),
        }
    }

    /// How long the lease surely holds from now.
    pub(crate) fn remaining(&self) -> Duration {
        self.until
            .borrow()
            .saturating_duration_since(Instant::now())
    }

    /// How early before its end a lease counts as gone: a tenth of it, for the rollback
    /// and the release to land before another worker may take the row over.
    fn margin(&self) -> Duration {
        self.length / 10
    }

    /// Whether there is time to start new work under this lease: a third of it is left.
    pub(crate) fn time_to_start(&self) -> bool {
        self.remaining() > self.length / 3
    }

    /// Whether there is time to finish work under this lease (its margin is left).
    pub(crate) fn time_to_finish(&self) -> bool {
        self.remaining() > self.margin()
    }

    /// Whether new work on `message` may start under this lease: there is time, and the
    /// row is still this worker's.
    pub(crate) fn may_start(&self, message: &StoredMessage) -> bool {
        self.time_to_start() && self.still_held(message)
    }

    /// Whether the lease of `message` still holds, with the margin.
    pub(crate) fn holds(&self, message: &StoredMessage) -> bool {
        self.time_to_finish() && self.still_held(message)
    }

    /// Whether the last renewal (if any) renewed `message`'s row.
    pub(crate) fn still_held(&self, message: &StoredMessage) -> bool {
        self.held.lock().is_ok_and(|held| {
            held.as_ref()
                .is_none_or(|rows| rows.contains(&(message.record.id, message.subscriber.clone())))
        })
    }

    /// Resolves when the lease is about to run out (within the margin) without having
    /// been renewed.
    pub(crate) async fn running_out(&self) {
        let mut changes = self.until.subscribe();
        loop {
            let end = *changes.borrow_and_update() - self.margin();
            tokio::select! {
                () = tokio::time::sleep_until(end) => {
                    if *changes.borrow() - self.margin() <= Instant::now() {
                        return;
                    }
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }

    /// Renews the lease of every row `token` still holds in `box_kind`, every third of
    /// the lease, until the future is dropped (when the cycle's work is done). A renewal
    /// that fails is tried again sooner; the work in flight stops by itself when the lease
    /// runs out (see [`Lease::running_out`]).
    pub(crate) async fn keep<S: Store>(
        &self,
        store: &S,
        box_kind: BoxKind,
        token: &str,
    ) -> Infallible {
        let every = self.length / 3;
        let mut next = Instant::now() + every;
        loop {
            tokio::time::sleep_until(next).await;
            let sent = Instant::now();
            let renewed = tokio::time::timeout(every, store.renew(box_kind, token, self.length))
                .await
                .unwrap_or_else(|_| {
                    Err(crate::error::StoreError::new(
                        crate::error::StoreErrorKind::Transient,
                        "renew leases",
                        "no answer within a third of the lease",
                    ))
                });
            match renewed {
                Ok(rows) => {
                    tracing::trace!(box = %box_kind, rows = rows.len(), "leases renewed");
                    if let Ok(mut held) = self.held.lock() {
                        *held = Some(rows.into_iter().collect());
                    }
                    self.until.send_replace(sent + self.length);
                    next = sent + every;
                }
                Err(error) => {
                    tracing::warn!(box = %box_kind, %error, remaining_ms = self.remaining().as_millis(), "could not renew the leases of the work in flight; trying again");
                    next = Instant::now() + self.margin().min(Duration::from_secs(1));
                }
            }
        }
    }

    /// Runs `work` while keeping the lease renewed.
    pub(crate) async fn renewed_during<S: Store, T>(
        &self,
        store: &S,
        box_kind: BoxKind,
        token: &str,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        tokio::select! {
            biased;
            done = work => done,
            never = self.keep(store, box_kind, token) => match never {},
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_lease_runs_out_only_when_not_renewed() {
        let lease = Lease::new(Duration::from_secs(9), Instant::now());
        let (kept, lost) = (
            crate::record::claimed_row_for_tests(),
            crate::record::claimed_row_for_tests(),
        );
        assert!(lease.may_start(&kept) && lease.holds(&kept) && lease.may_start(&lost));
        if let Ok(mut held) = lease.held.lock() {
            *held = Some(HashSet::from([(kept.record.id, kept.subscriber.clone())]));
        }
        assert!(lease.may_start(&kept));
        assert!(
            !lease.may_start(&lost) && !lease.holds(&lost),
            "a row the renewal left out is another worker's"
        );
        tokio::time::advance(Duration::from_secs(5)).await;
        lease
            .until
            .send_replace(Instant::now() + Duration::from_secs(9));
        let started = Instant::now();
        lease.running_out().await;
        assert_eq!(
            started.elapsed().as_secs_f64().round(),
            8.0,
            "the renewed lease, less its margin"
        );
        assert!(!lease.may_start(&kept));
    }
}
