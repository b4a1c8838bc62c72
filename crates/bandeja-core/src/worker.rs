//! The loop every box worker runs: wait for the initial delay, then cycle; between cycles
//! sleep until the polling interval passes or a commit wakes it; stop claiming on shutdown
//! and finish (or release) the batch in hand within `lock-at-most-for`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::envelope::MessageId;
use crate::record::{BoxKind, StoredMessage};
use crate::runtime::Shared;
use crate::store::{Outcome, Resolution, Store};

/// The rows a cycle holds, so a shutdown that cannot wait for the cycle can release them.
#[derive(Default, Clone)]
pub(crate) struct Claimed {
    held: Arc<Mutex<Vec<Held>>>,
    /// The box's live floor, cached.
    pub(crate) floor: Arc<Floor>,
}

/// A claim token and the `(id, subscriber)` of each row it holds.
type Held = (String, Vec<(MessageId, Option<String>)>);

fn held(token: &str, messages: &[StoredMessage]) -> Held {
    (
        token.to_owned(),
        messages
            .iter()
            .map(|m| (m.record.id, m.subscriber.clone()))
            .collect(),
    )
}

impl Claimed {
    /// The cycle now holds exactly these rows.
    pub(crate) fn set(&self, token: &str, messages: &[StoredMessage]) {
        if let Ok(mut all) = self.held.lock() {
            *all = vec![held(token, messages)];
        }
    }

    /// The cycle also holds these rows (a further claim of the same cycle).
    pub(crate) fn add(&self, token: &str, messages: &[StoredMessage]) {
        if let Ok(mut all) = self.held.lock() {
            all.push(held(token, messages));
        }
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut all) = self.held.lock() {
            all.clear();
        }
    }

    fn take(&self) -> Vec<Held> {
        self.held
            .lock()
            .map(|mut all| std::mem::take(&mut *all))
            .unwrap_or_default()
    }
}

/// What a worker knows of its box between claims: the live floor (see
/// [`ClaimRequest::from_seq`](crate::store::ClaimRequest)) and the active tenants, read
/// again at least once a second, and where the tenant rotation stands.
#[derive(Default)]
pub(crate) struct Floor {
    cache: Mutex<Option<Snapshot>>,
    rotation: std::sync::atomic::AtomicUsize,
    /// Whether a [`Store::maintain`] call of this box is running.
    maintaining: Arc<std::sync::atomic::AtomicBool>,
}

/// The floor and the active tenants, as read at `at`.
#[derive(Clone)]
pub(crate) struct Snapshot {
    pub(crate) floor: Option<i64>,
    pub(crate) tenants: Vec<crate::tenant::TenantId>,
    at: Instant,
}

/// How often a worker reads its box's live floor and tenants again.
const FLOOR_REFRESH: Duration = Duration::from_secs(1);

impl Floor {
    /// The floor and tenants to claim with, read again from the store when older than a
    /// second.
    pub(crate) async fn current<S: Store>(&self, store: &S, box_kind: BoxKind) -> Snapshot {
        let cached = self.cache.lock().ok().and_then(|c| c.clone());
        if let Some(snapshot) = cached.clone() {
            if snapshot.at.elapsed() < FLOOR_REFRESH {
                return snapshot;
            }
        }
        if cached.is_none() {
            // First claim of this worker: a box that received a burst before any statistics
            // were gathered makes the planner choose badly for its first (largest) claim.
            if let Err(error) = store.maintain(box_kind).await {
                tracing::debug!(box = %box_kind, %error, "box housekeeping failed");
            }
        } else {
            self.maintain(store, box_kind);
        }
        let snapshot = Snapshot {
            // On error, claim without a floor or a rotation (correct, only slower); the
            // claim itself will report a store that is down.
            floor: store.live_floor(box_kind).await.unwrap_or_else(|error| {
                tracing::warn!(box = %box_kind, %error, "could not read the live floor");
                None
            }),
            tenants: store
                .active_tenants(box_kind)
                .await
                .unwrap_or_else(|error| {
                    tracing::warn!(box = %box_kind, %error, "could not list the active tenants");
                    Vec::new()
                }),
            at: Instant::now(),
        };
        if let Ok(mut cache) = self.cache.lock() {
            *cache = Some(snapshot.clone());
        }
        snapshot
    }

    /// Starts the store's housekeeping of the box in the background, unless it is running.
    fn maintain<S: Store>(&self, store: &S, box_kind: BoxKind) {
        use std::sync::atomic::Ordering;
        if self.maintaining.swap(true, Ordering::AcqRel) {
            return;
        }
        let (store, running) = (store.clone(), self.maintaining.clone());
        tokio::spawn(async move {
            if let Err(error) = store.maintain(box_kind).await {
                tracing::debug!(box = %box_kind, %error, "box housekeeping failed");
            }
            running.store(false, Ordering::Release);
        });
    }

    /// The next position of the tenant rotation.
    pub(crate) fn rotate(&self) -> usize {
        self.rotation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

async fn run_cycle<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    claimed: &Claimed,
) -> crate::error::Result<usize> {
    if box_kind.is_inbox() {
        crate::processing::worker::cycle(shared, box_kind, claimed).await
    } else {
        crate::dispatch::worker::cycle(shared, box_kind, claimed).await
    }
}

/// Resolves when shutdown has been requested.
pub(crate) async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// The worker of one box, until shutdown.
pub(crate) async fn run<S: Store>(
    shared: Arc<Shared<S>>,
    box_kind: BoxKind,
    mut shutdown: watch::Receiver<bool>,
) {
    let config = shared.config.group(box_kind.group()).clone();
    let mut wake = shared.store.wakers().subscribe(box_kind);
    tracing::info!(box = %box_kind, worker = %shared.worker_id, "worker started");
    tokio::select! {
        () = stopped(&mut shutdown) => return,
        () = tokio::time::sleep(config.polling_initial_delay) => {}
    }
    let claimed = Claimed::default();
    let mut failures: u32 = 0;
    loop {
        wake.mark_unchanged();
        let started = std::time::Instant::now();
        let cycle = run_cycle(&shared, box_kind, &claimed);
        tokio::pin!(cycle);
        let result = tokio::select! {
            result = &mut cycle => Some(result),
            () = stopped(&mut shutdown) => None,
        };
        let result = match result {
            Some(result) => result,
            None => {
                finish_or_release(
                    &shared,
                    box_kind,
                    cycle,
                    &claimed,
                    config.lock_at_most_for / 2,
                )
                .await;
                break;
            }
        };
        if let Ok(n) = result {
            tracing::debug!(box = %box_kind, claimed = n, elapsed_ms = started.elapsed().as_secs_f64() * 1000.0, "cycle");
        }
        // After a failed cycle (database or broker unreachable) commits do not cut the
        // backoff short: every emission would otherwise start another doomed cycle.
        let listen = result.is_ok();
        let pause = match result {
            Ok(0) => {
                failures = 0;
                config.polling_interval
            }
            Ok(_) => {
                failures = 0;
                continue;
            }
            Err(error) => {
                failures = failures.saturating_add(1);
                // A long outage logs at failures 1, 2, 4, 8, … rather than every cycle.
                if failures.is_power_of_two() {
                    tracing::warn!(box = %box_kind, %error, failures, "worker cycle failed; retrying with backoff (at most the polling interval)");
                } else {
                    tracing::debug!(box = %box_kind, %error, failures, "worker cycle failed again");
                }
                config
                    .polling_interval
                    .min(Duration::from_millis(100) * 2u32.saturating_pow(failures.min(10)))
            }
        };
        tokio::select! {
            () = stopped(&mut shutdown) => break,
            _ = wake.changed(), if listen => {}
            () = tokio::time::sleep(pause) => {}
        }
    }
    tracing::info!(box = %box_kind, worker = %shared.worker_id, "worker stopped");
}

/// Shutdown during a cycle: give it `grace` (half of `lock-at-most-for`, so the release lands
/// before anyone could take the lease over) to finish; if it does not, drop it (rolling
/// back handlers in flight) and release its rows back to PENDING for another worker.
async fn finish_or_release<S: Store, F>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    cycle: F,
    claimed: &Claimed,
    grace: Duration,
) where
    F: std::future::Future<Output = crate::error::Result<usize>>,
{
    if tokio::time::timeout(grace, cycle).await.is_ok() {
        return;
    }
    for (token, held) in claimed.take() {
        if held.is_empty() {
            continue;
        }
        let outcomes: Vec<Outcome> = held
            .into_iter()
            .map(|(id, subscriber)| Outcome {
                id,
                subscriber,
                resolution: Resolution::Release,
            })
            .collect();
        match shared.store.resolve(box_kind, &token, &outcomes).await {
            Ok(()) => {
                tracing::info!(box = %box_kind, released = outcomes.len(), "released unfinished rows on shutdown")
            }
            Err(error) => {
                tracing::warn!(box = %box_kind, %error, "could not release rows on shutdown; they return after their lease expires")
            }
        }
    }
}
