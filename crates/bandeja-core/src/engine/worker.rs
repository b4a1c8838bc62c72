//! The loop every box worker runs: wait for the initial delay, then cycle; between cycles
//! sleep until the polling interval passes or a commit wakes it; stop claiming on shutdown
//! and finish (or release) the batches in hand within `lock-at-most-for`. An inbox worker
//! does not wait for stragglers: a cycle that has started every row it claimed and is older
//! than the patience (see [`stragglers`](crate::stragglers)) — at once, when no
//! subscriber of the inbox is measured fast — is left to finish beside the next cycles.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use tokio::sync::{watch, Notify};

use crate::context::Shared;
use crate::envelope::MessageId;
use crate::record::{BoxKind, StoredMessage};
use crate::store::{Outcome, Resolution, Store};
use crate::stragglers;

/// The rows a cycle holds, so a shutdown that cannot wait for the cycle can release them,
/// and how many of them have not started yet, so the worker knows when the cycle is only
/// waiting for stragglers.
#[derive(Default, Clone)]
pub(crate) struct Claimed {
    held: Arc<Mutex<Vec<Held>>>,
    /// Rows claimed whose handling has not begun.
    queued: Arc<AtomicUsize>,
    /// Notified when `queued` drops to zero.
    all_started: Arc<Notify>,
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
    /// The slot of another cycle of the same box: its own rows, the same floor.
    pub(crate) fn lane(&self) -> Claimed {
        Claimed {
            floor: self.floor.clone(),
            ..Claimed::default()
        }
    }

    /// The cycle now holds exactly these rows, none started.
    pub(crate) fn set(&self, token: &str, messages: &[StoredMessage]) {
        if let Ok(mut all) = self.held.lock() {
            *all = vec![held(token, messages)];
        }
        self.queued.store(messages.len(), Ordering::Release);
    }

    /// The cycle also holds these rows (a further claim of the same cycle).
    pub(crate) fn add(&self, token: &str, messages: &[StoredMessage]) {
        if let Ok(mut all) = self.held.lock() {
            all.push(held(token, messages));
        }
        self.queued.fetch_add(messages.len(), Ordering::AcqRel);
    }

    /// The handling of `n` more rows has begun.
    pub(crate) fn started(&self, n: usize) {
        let before = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
                Some(q.saturating_sub(n))
            })
            .unwrap_or_default();
        if before > 0 && before <= n {
            self.all_started.notify_one();
        }
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut all) = self.held.lock() {
            all.clear();
        }
        self.queued.store(0, Ordering::Release);
        self.all_started.notify_one();
    }

    /// Resolves once every row the cycle holds has started (at once if it holds none).
    async fn every_row_started(&self) {
        loop {
            let notified = self.all_started.notified();
            if self.queued.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
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
/// again about once a second, and where the tenant rotation stands.
#[derive(Default)]
pub(crate) struct Floor {
    cache: Arc<Mutex<Option<Snapshot>>>,
    rotation: std::sync::atomic::AtomicUsize,
    /// Whether a [`Store::maintain`] call of this box is running.
    maintaining: Arc<std::sync::atomic::AtomicBool>,
    /// Whether a read of the floor and tenants is running in the background.
    refreshing: Arc<std::sync::atomic::AtomicBool>,
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
/// A snapshot older than this is read again before the claim instead of in the background.
const FLOOR_STALE: Duration = Duration::from_secs(10);

impl Snapshot {
    /// Whether claims made with `old` could have missed rows this snapshot shows: a floor
    /// that went down (a late commit, an operator retry below it) or another set of tenants.
    fn hides_from(&self, old: &Snapshot) -> bool {
        let floor_went_down = matches!((old.floor, self.floor), (Some(o), Some(n)) if n < o);
        floor_went_down || old.tenants != self.tenants
    }
}

impl Floor {
    /// The floor and tenants to claim with. The first claim reads them (after the box's
    /// housekeeping), and so does a claim whose snapshot is older than [`FLOOR_STALE`] (a
    /// worker back from a quiet spell). Otherwise claims use the last snapshot at once, and
    /// one older than a second is read again in the background for the claims after it,
    /// so no claim waits for those two statements (before, the message that arrived when
    /// the snapshot had aged waited for them: about one in 200 at 200 messages a second,
    /// all of the p99). A background read that finds what the last claim could have missed
    /// (a lower floor, other tenants) wakes the worker ([`Snapshot::hides_from`]).
    pub(crate) async fn current<S: Store>(&self, store: &S, box_kind: BoxKind) -> Snapshot {
        let cached = self.cache.lock().ok().and_then(|c| c.clone());
        match cached {
            Some(snapshot) if snapshot.at.elapsed() < FLOOR_STALE => {
                if snapshot.at.elapsed() >= FLOOR_REFRESH {
                    self.maintain(store, box_kind);
                    self.refresh(store, box_kind);
                }
                snapshot
            }
            Some(_) => {
                self.maintain(store, box_kind);
                self.read(store, box_kind).await
            }
            None => {
                // First claim of this worker: a box that received a burst before any
                // statistics were gathered makes the planner choose badly for its first
                // (largest) claim.
                if let Err(error) = store.maintain(box_kind).await {
                    tracing::debug!(box = %box_kind, %error, "box housekeeping failed");
                }
                self.read(store, box_kind).await
            }
        }
    }

    /// Reads the floor and tenants now, and keeps them.
    async fn read<S: Store>(&self, store: &S, box_kind: BoxKind) -> Snapshot {
        let snapshot = read_snapshot(store, box_kind).await;
        if let Ok(mut cache) = self.cache.lock() {
            *cache = Some(snapshot.clone());
        }
        snapshot
    }

    /// Reads the floor and tenants again in the background, unless a read is running; wakes
    /// the box's worker when the claims made with the old snapshot could have missed rows.
    fn refresh<S: Store>(&self, store: &S, box_kind: BoxKind) {
        let (store, cache) = (store.clone(), self.cache.clone());
        spawn_unless_running(&self.refreshing, async move {
            let snapshot = read_snapshot(&store, box_kind).await;
            let missed = match cache.lock() {
                Ok(mut cache) => {
                    let missed = cache.as_ref().is_some_and(|old| snapshot.hides_from(old));
                    *cache = Some(snapshot);
                    missed
                }
                Err(_) => false,
            };
            if missed {
                store.wakers().wake(box_kind);
            }
        });
    }

    /// Starts the store's housekeeping of the box in the background, unless it is running.
    fn maintain<S: Store>(&self, store: &S, box_kind: BoxKind) {
        let store = store.clone();
        spawn_unless_running(&self.maintaining, async move {
            if let Err(error) = store.maintain(box_kind).await {
                tracing::debug!(box = %box_kind, %error, "box housekeeping failed");
            }
        });
    }

    /// The next position of the tenant rotation.
    pub(crate) fn rotate(&self) -> usize {
        self.rotation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// Spawns `work` unless the work `running` flags is still running; clears the flag when it
/// ends.
fn spawn_unless_running(
    running: &Arc<std::sync::atomic::AtomicBool>,
    work: impl std::future::Future<Output = ()> + Send + 'static,
) {
    use std::sync::atomic::Ordering;
    if running.swap(true, Ordering::AcqRel) {
        return;
    }
    let running = running.clone();
    tokio::spawn(async move {
        work.await;
        running.store(false, Ordering::Release);
    });
}

/// The box's live floor and active tenants, read now. On error, claims go on without a
/// floor or a rotation (correct, only slower); the claim itself reports a store that is
/// down.
async fn read_snapshot<S: Store>(store: &S, box_kind: BoxKind) -> Snapshot {
    Snapshot {
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
    }
}

/// What a box worker does in each cycle: claim into its lane's slot and work the batch
/// (processing for an inbox, dispatch for an outbox). The assembly picks one per box; this
/// loop knows neither stage.
pub(crate) trait Cycle<S: Store>: Copy + Send + Sync + 'static {
    /// One cycle: how many rows it claimed.
    fn cycle<'a>(
        self,
        shared: &'a Shared<S>,
        box_kind: BoxKind,
        claimed: &'a Claimed,
    ) -> impl std::future::Future<Output = crate::error::Result<usize>> + Send + 'a;
}

/// One cycle in lane `lane`: what it returns, and how long it took.
async fn lane_cycle<S: Store, C: Cycle<S>>(
    shared: Arc<Shared<S>>,
    box_kind: BoxKind,
    stage: C,
    slot: Claimed,
    lane: usize,
) -> (usize, crate::error::Result<usize>, Duration) {
    let started = Instant::now();
    let result = stage.cycle(&shared, box_kind, &slot).await;
    (lane, result, started.elapsed())
}

pub(crate) use crate::context::stopped;

/// The worker of one box, until shutdown.
pub(crate) async fn run<S: Store, C: Cycle<S>>(
    shared: Arc<Shared<S>>,
    box_kind: BoxKind,
    stage: C,
    mut shutdown: watch::Receiver<bool>,
) {
    let config = shared.config.group(box_kind).clone();
    let mut wake = shared.store.wakers().subscribe(box_kind);
    tracing::info!(box = %box_kind, worker = %shared.worker_id, "worker started");
    tokio::select! {
        () = stopped(&mut shutdown) => return,
        () = tokio::time::sleep(config.polling_initial_delay) => {}
    }
    if !shared.registered(&mut shutdown).await {
        return;
    }
    // An outbox cycle is bounded by its publish timeouts and keeps one lane: publishing
    // more at once would only press a slow broker harder.
    let patience = box_kind.is_inbox().then(|| stragglers::patience(&config));
    let lanes = if patience.is_some() {
        stragglers::MAX_LANES
    } else {
        1
    };
    let first = Claimed::default();
    let slots: Vec<Claimed> = std::iter::once(first.clone())
        .chain((1..lanes).map(|_| first.lane()))
        .collect();
    let mut free: Vec<usize> = (0..lanes).rev().collect();
    let mut running = FuturesUnordered::new();
    // The lane claiming now, and when it started; `None` while pausing between cycles.
    let mut current: Option<(usize, Instant)> = None;
    // While pausing: until when, and whether a commit may cut the pause short.
    let mut paused: Option<(Instant, bool)> = None;
    let mut failures: u32 = 0;
    let mut start = true;
    loop {
        if start {
            start = false;
            if let Some(lane) = free.pop() {
                wake.mark_unchanged();
                running.push(lane_cycle(
                    shared.clone(),
                    box_kind,
                    stage,
                    slots[lane].clone(),
                    lane,
                ));
                current = Some((lane, Instant::now()));
            }
        }
        let detachable = match (current, patience) {
            (Some((lane, began)), Some(patience)) if !free.is_empty() => {
                // Slow handlers only (none measured fast): claim again as soon as every
                // row has started, so the permits they free never wait for the slowest.
                let wait = if shared.pace.any_batched(box_kind) {
                    patience
                } else {
                    Duration::ZERO
                };
                Some((&slots[lane], began + wait))
            }
            _ => None,
        };
        let only_stragglers_left = async {
            match detachable {
                Some((slot, after)) => {
                    tokio::time::sleep_until(after.into()).await;
                    slot.every_row_started().await;
                }
                None => std::future::pending().await,
            }
        };
        let resume = async {
            match paused {
                Some((until, listen)) => tokio::select! {
                    () = tokio::time::sleep_until(until.into()) => {}
                    _ = wake.changed(), if listen => {}
                },
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stopped(&mut shutdown) => {
                finish_or_release(&shared, box_kind, &mut running, &slots, config.lock_at_most_for / 2).await;
                break;
            }
            Some((lane, result, took)) = running.next(), if !running.is_empty() => {
                free.push(lane);
                if current.is_some_and(|(claiming, _)| claiming == lane) {
                    current = None;
                    match after_cycle(box_kind, &config, result, took, &mut failures) {
                        None => start = true,
                        Some(pause) => paused = Some(pause),
                    }
                } else {
                    match result {
                        Err(error) => tracing::warn!(box = %box_kind, %error, "a cycle left to finish its stragglers failed; its rows return after their lease"),
                        Ok(_) => tracing::debug!(box = %box_kind, elapsed_ms = took.as_secs_f64() * 1000.0, "a cycle left to finish its stragglers is done"),
                    }
                    // Neither claiming nor pausing (no lane was free to claim in): claim now.
                    start = current.is_none() && paused.is_none();
                }
            }
            () = only_stragglers_left => {
                tracing::debug!(box = %box_kind, "a cycle is waiting only for slow handlers; claiming beside it");
                current = None;
                start = true;
            }
            () = resume => {
                paused = None;
                start = true;
            }
        }
    }
    tracing::info!(box = %box_kind, worker = %shared.worker_id, "worker stopped");
}

/// What follows the claiming cycle's end: `None` to claim again at once (it found rows),
/// or the pause before the next claim and whether a commit may cut it short.
fn after_cycle(
    box_kind: BoxKind,
    config: &crate::config::WorkerConfig,
    result: crate::error::Result<usize>,
    took: Duration,
    failures: &mut u32,
) -> Option<(Instant, bool)> {
    let pause = match result {
        Ok(0) => {
            *failures = 0;
            config.polling_interval
        }
        Ok(n) => {
            *failures = 0;
            tracing::debug!(box = %box_kind, claimed = n, elapsed_ms = took.as_secs_f64() * 1000.0, "cycle");
            return None;
        }
        Err(error) => {
            *failures = failures.saturating_add(1);
            // A long outage logs at failures 1, 2, 4, 8, … rather than every cycle.
            if failures.is_power_of_two() {
                tracing::warn!(box = %box_kind, %error, failures = *failures, "worker cycle failed; retrying with backoff (at most the polling interval)");
            } else {
                tracing::debug!(box = %box_kind, %error, failures = *failures, "worker cycle failed again");
            }
            // After a failed cycle (database or broker unreachable) commits do not cut the
            // backoff short: every emission would otherwise start another doomed cycle.
            let backoff = config
                .polling_interval
                .min(Duration::from_millis(100) * 2u32.saturating_pow((*failures).min(10)));
            return Some((Instant::now() + backoff, false));
        }
    };
    Some((Instant::now() + pause, true))
}

/// Shutdown during cycles: give them `grace` (half of `lock-at-most-for`, so the release
/// lands before anyone could take the lease over) to finish; those that do not are dropped
/// (rolling back handlers in flight) and their rows released back to PENDING for another
/// worker.
async fn finish_or_release<S: Store, F>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    running: &mut FuturesUnordered<F>,
    slots: &[Claimed],
    grace: Duration,
) where
    F: std::future::Future,
{
    let finished = async { while running.next().await.is_some() {} };
    if tokio::time::timeout(grace, finished).await.is_ok() {
        return;
    }
    running.clear();
    for (token, held) in slots.iter().flat_map(Claimed::take) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::TenantId;

    fn snapshot(floor: Option<i64>, tenants: &[&str]) -> Snapshot {
        Snapshot {
            floor,
            tenants: tenants.iter().map(|t| TenantId::new(t).unwrap()).collect(),
            at: Instant::now(),
        }
    }

    #[test]
    fn a_background_read_wakes_the_worker_only_when_claims_could_have_missed_rows() {
        let old = snapshot(Some(100), &["acme", "globex"]);
        // The floor went down (an operator retried a row below it): wake.
        assert!(snapshot(Some(40), &["acme", "globex"]).hides_from(&old));
        // Another tenant became active: wake.
        assert!(snapshot(Some(100), &["acme", "globex", "initech"]).hides_from(&old));
        assert!(snapshot(Some(100), &["acme"]).hides_from(&old));
        // The floor moved up, or the box emptied: nothing was missed.
        assert!(!snapshot(Some(180), &["acme", "globex"]).hides_from(&old));
        assert!(!snapshot(None, &["acme", "globex"]).hides_from(&old));
        // Claims without a floor saw every row.
        assert!(!snapshot(Some(5), &[]).hides_from(&snapshot(None, &[])));
    }
}
