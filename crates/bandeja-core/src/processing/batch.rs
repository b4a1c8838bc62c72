//! One transaction per chunk of a batch: each handler runs inside a savepoint (a failure
//! rolls back only its own work), then every successful row is marked COMPLETED in one
//! statement and the chunk commits once. Batch handlers get all their messages of the
//! chunk in one call (one savepoint); if that call fails, each message is tried alone.
//! Commits are what cost on PostgreSQL; this pays one per chunk instead of one per
//! message, while each handler stays its own unit of failure.
//!
//! Whatever a handler does to the transaction is charged to that handler alone:
//! - it returned `Ok` but its savepoint cannot be released (it swallowed a failed
//!   statement: on PostgreSQL the transaction is then aborted): rolled back to its
//!   savepoint, charged as a failed attempt with what to fix, and the chunk goes on;
//! - it ended the transaction itself (`COMMIT`/`ROLLBACK`: its savepoint is gone): charged
//!   the same; the messages completed before it in the chunk, and those not started yet,
//!   each run again alone, in a transaction of their own;
//! - the chunk's `COMMIT` fails (a deferred constraint, a serialization failure): each of
//!   its messages runs again alone, where a failing commit is its own.
//!
//! Nothing goes back to PENDING at zero delay. A chunk whose next handler has not started
//! after the patience (the one running is slow) hands its remaining messages over to run
//! alone beside it ([`Chunk::take_rest`]); no handler is stopped for being slow.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tracing::Instrument;

use crate::lease::Lease;
use crate::processing::handler::ErasedHandler;
use crate::processing::run::{self, AttemptFailed};
use crate::processing::single::broken_by_handler;
use crate::record::{BoxKind, MessageRecord, StoredMessage};
use crate::runtime::Shared;
use crate::store::{Outcome, Resolution, SavepointStep, Store};

/// What one savepoint covers: one message, or a batch handler's group of messages.
struct Unit<'m, S: Store> {
    handler: Arc<dyn ErasedHandler<S>>,
    messages: Vec<&'m StoredMessage>,
}

/// The messages of one batched transaction, taken in order by the chunk's run (or, past
/// the patience, handed over to run alone).
pub(crate) struct Chunk<'m, S: Store> {
    units: Vec<Unit<'m, S>>,
    /// The first unit not taken yet.
    next: Mutex<usize>,
    finished: Notify,
}

/// How one unit's attempt ended.
enum Step {
    /// Its handler succeeded and its savepoint was released.
    Done(Vec<MessageRecord>),
    /// Its handler failed; its savepoint was rolled back and the transaction goes on.
    Failed(AttemptFailed),
    /// The transaction is gone. `Some`: this unit's handler broke it (charged to it);
    /// `None`: the savepoint could not even be opened (the connection).
    Broken(Option<AttemptFailed>, String),
}

/// What a chunk leaves to its caller: the outcomes to write back (after its transaction:
/// a failed handler's retry must not depend on it), the messages to run again alone, each
/// in a transaction of its own, and whether the chunk's failure is still unattributed (its
/// commit failed, say): then a message that fails alone is charged for the chunk's
/// attempt too, having caused both, so a guilty handler runs at most `max-retries + 1`
/// times in all.
pub(crate) type ChunkLeft<'m> = (Vec<Outcome>, Vec<&'m StoredMessage>, bool);

/// Notifies the chunk's end when dropped (whichever way its run ends).
struct Finishing<'a>(&'a Notify);

impl Drop for Finishing<'_> {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

impl<'m, S: Store> Chunk<'m, S> {
    /// The chunk's messages as units; messages with no runnable handler become outcomes.
    pub(crate) fn new(
        shared: &Shared<S>,
        box_kind: BoxKind,
        messages: &[&'m StoredMessage],
        failures: &mut Vec<Outcome>,
    ) -> Self {
        let mut units: Vec<Unit<'m, S>> = Vec::new();
        let mut groups: BTreeMap<&str, usize> = BTreeMap::new();
        for &message in messages {
            let handler = match run::handler_for(shared, box_kind, message) {
                Ok(handler) => handler,
                Err(outcome) => {
                    failures.push(outcome);
                    continue;
                }
            };
            if handler.batches() {
                // A chunk holds one tenant: the subscriber alone keys the group.
                let key = message.subscriber.as_deref().unwrap_or_default();
                if let Some(&index) = groups.get(key) {
                    units[index].messages.push(message);
                    continue;
                }
                groups.insert(key, units.len());
            }
            units.push(Unit {
                handler,
                messages: vec![message],
            });
        }
        Chunk {
            units,
            next: Mutex::new(0),
            finished: Notify::new(),
        }
    }

    /// Takes the next unit to run, if any is left.
    fn take_next(&self) -> Option<&Unit<'m, S>> {
        let mut next = self.next.lock().ok()?;
        let unit = self.units.get(*next)?;
        *next += 1;
        Some(unit)
    }

    /// Takes every unit not started yet, for someone else to run: their messages.
    pub(crate) fn take_rest(&self) -> Vec<&'m StoredMessage> {
        let Ok(mut next) = self.next.lock() else {
            return Vec::new();
        };
        let rest = self.units.get(*next..).unwrap_or_default();
        *next = self.units.len();
        rest.iter()
            .flat_map(|u| u.messages.iter().copied())
            .collect()
    }

    /// Resolves when the chunk's run has ended.
    pub(crate) async fn finished(&self) {
        self.finished.notified().await;
    }

    /// Runs the chunk in one transaction under `lease`.
    pub(crate) async fn run(
        &self,
        shared: &Shared<S>,
        box_kind: BoxKind,
        token: &str,
        lease: &Lease,
    ) -> ChunkLeft<'m> {
        let _finishing = Finishing(&self.finished);
        let mut failures = Vec::new();
        if self.units.is_empty() {
            return (failures, Vec::new(), false);
        }
        if !lease.time_to_start() {
            failures.extend(self.take_rest().into_iter().map(run::release));
            return (failures, Vec::new(), false);
        }
        let mut tx = match shared.store.begin().await {
            Ok(tx) => tx,
            Err(error) => {
                tracing::warn!(%error, "could not begin a batch transaction; its messages are released");
                failures.extend(self.take_rest().into_iter().map(run::release));
                return (failures, Vec::new(), false);
            }
        };
        // Whether the transaction committed can be asked later, if a handler ends it.
        let mark = shared
            .store
            .transaction_mark(&mut tx)
            .await
            .unwrap_or_else(|error| {
                tracing::debug!(%error, "no transaction mark");
                None
            });
        let mut done: Vec<&'m StoredMessage> = Vec::new();
        let mut emitted: Vec<MessageRecord> = Vec::new();
        while let Some(unit) = self.take_next() {
            if !lease.time_to_start() {
                failures.extend(unit.messages.iter().copied().map(run::release));
                failures.extend(self.take_rest().into_iter().map(run::release));
                break;
            }
            if !unit.messages.iter().all(|m| lease.still_held(m)) {
                // Taken over while renewals were failing: no longer this worker's.
                tracing::warn!("a row of the batch was taken over by another worker; not started");
                continue;
            }
            let span = run::span(unit.messages[0]);
            let step = attempt(shared, box_kind, &mut tx, unit, &unit.messages, lease)
                .instrument(span.clone())
                .await;
            let broken = match step {
                Step::Done(records) => {
                    done.extend(unit.messages.iter().copied());
                    emitted.extend(records);
                    None
                }
                // A group failed: find the culprit(s) by trying each message alone.
                Step::Failed(_) if unit.messages.len() > 1 => {
                    let mut broken = None;
                    for &message in &unit.messages {
                        match attempt(shared, box_kind, &mut tx, unit, &[message], lease)
                            .instrument(run::span(message))
                            .await
                        {
                            Step::Done(records) => {
                                done.push(message);
                                emitted.extend(records);
                            }
                            Step::Failed(failed) => {
                                failures.push(failed.outcome(shared, box_kind, message));
                            }
                            Step::Broken(guilty, error) => {
                                let found = guilty.is_some();
                                if let Some(failed) = guilty {
                                    failures.push(failed.outcome(shared, box_kind, message));
                                }
                                broken = Some((error, !found));
                                break;
                            }
                        }
                    }
                    broken
                }
                Step::Failed(failed) => {
                    failures.push(failed.outcome(shared, box_kind, unit.messages[0]));
                    None
                }
                Step::Broken(Some(failed), error) if unit.messages.len() == 1 => {
                    failures.push(failed.outcome(shared, box_kind, unit.messages[0]));
                    Some((error, false))
                }
                Step::Broken(_, error) => {
                    // A group, or not a handler's doing: each message runs again alone.
                    done.extend(unit.messages.iter().copied());
                    Some((error, true))
                }
            };
            if let Some((error, unattributed)) = broken {
                drop(tx);
                let done: Vec<&'m StoredMessage> = done
                    .into_iter()
                    .filter(|m| !failures.iter().any(|f| same_row(f, m)))
                    .collect();
                let mut alone = self
                    .after_break(shared, mark, done, &emitted, &mut failures, &error)
                    .await;
                alone.extend(self.take_rest());
                return (failures, alone, unattributed);
            }
        }
        if done.is_empty() {
            return (failures, Vec::new(), false);
        }
        self.commit(
            shared,
            box_kind,
            token,
            lease,
            (tx, mark),
            done,
            &emitted,
            failures,
        )
        .await
    }

    /// After the chunk's transaction broke or failed to commit: what became of the work
    /// of `done`, the messages handled in it. If it committed nonetheless (a handler ran
    /// `COMMIT` itself, or a commit whose answer was lost), they are marked COMPLETED
    /// (into `outcomes`); if it certainly did not, they are returned to run again alone;
    /// if that cannot be known now (the database is unreachable), they go back to PENDING
    /// after a short backoff through the guarded outcome write, which changes nothing if
    /// they did commit. Never run twice on a guess.
    async fn after_break(
        &self,
        shared: &Shared<S>,
        mark: Option<i64>,
        done: Vec<&'m StoredMessage>,
        emitted: &[MessageRecord],
        outcomes: &mut Vec<Outcome>,
        error: &str,
    ) -> Vec<&'m StoredMessage> {
        if done.is_empty() {
            return Vec::new();
        }
        // A store without marks (SQLite) answers a failed commit with certainty: it did
        // not commit.
        let committed = match mark {
            None => Some(false),
            Some(mark) => shared.store.committed(mark).await.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "could not learn whether a broken batch transaction committed");
                None
            }),
        };
        match committed {
            Some(true) => {
                tracing::warn!(%error, completed = done.len(), "the batch transaction broke after it committed (a handler committed it itself, or the commit's answer was lost): its messages are COMPLETED");
                outcomes.extend(done.into_iter().map(crate::attempt::success));
                run::wake_for(shared, emitted);
                Vec::new()
            }
            Some(false) => {
                tracing::warn!(%error, "the batch transaction broke; the messages handled in it run again alone");
                done
            }
            None => {
                tracing::warn!(%error, "the batch transaction broke and whether it committed is unknown; its messages go back to PENDING unless they committed");
                let config = shared.config.group(done[0].box_kind.group());
                outcomes.extend(done.into_iter().map(|m| {
                    crate::attempt::transient(
                        m,
                        config,
                        format!("batch transaction failed: {error}"),
                    )
                }));
                Vec::new()
            }
        }
    }

    /// Marks `done` COMPLETED in one statement and commits, while the lease holds.
    #[allow(clippy::too_many_arguments)]
    async fn commit(
        &self,
        shared: &Shared<S>,
        box_kind: BoxKind,
        token: &str,
        lease: &Lease,
        (mut tx, mark): (S::Tx, Option<i64>),
        done: Vec<&'m StoredMessage>,
        emitted: &[MessageRecord],
        mut failures: Vec<Outcome>,
    ) -> ChunkLeft<'m> {
        if !lease.time_to_finish() {
            tracing::warn!("the lease of a batch ran out unrenewed before its commit: rolled back and released");
            failures.extend(done.into_iter().map(run::release));
            return (failures, Vec::new(), false);
        }
        let completions: Vec<Outcome> = done
            .iter()
            .map(|m| Outcome {
                id: m.record.id,
                subscriber: m.subscriber.clone(),
                resolution: Resolution::Completed,
            })
            .collect();
        let marked = shared
            .store
            .resolve_in(&mut tx, box_kind, token, &completions)
            .await;
        match marked {
            Ok(n) if usize::try_from(n).is_ok_and(|n| n == done.len()) => {}
            Ok(n) => {
                tracing::warn!(
                    lost = done.len().saturating_sub(usize::try_from(n).unwrap_or(0)),
                    of = done.len(),
                    "leases were lost before the batch committed (another worker took them over): rolled back"
                );
                failures.extend(done.into_iter().map(run::release));
                return (failures, Vec::new(), false);
            }
            Err(error) => {
                // Nothing was committed: the transaction is dropped (rolled back).
                tracing::warn!(%error, "could not mark a batch COMPLETED; its messages run again alone");
                drop(tx);
                let alone = self
                    .after_break(
                        shared,
                        mark,
                        done,
                        emitted,
                        &mut failures,
                        &error.to_string(),
                    )
                    .await;
                return (failures, alone, true);
            }
        }
        match shared.store.commit(tx).await {
            Ok(()) => {
                crate::fault::point("after-handler-commit");
                for message in &done {
                    shared.conflicts.forget(message);
                }
                run::wake_for(shared, emitted);
                (failures, Vec::new(), false)
            }
            Err(error) => {
                // A deferred constraint, a serialization failure: whose, only a commit of
                // each alone can tell. A lost connection: maybe it did commit.
                let alone = self
                    .after_break(
                        shared,
                        mark,
                        done,
                        emitted,
                        &mut failures,
                        &error.to_string(),
                    )
                    .await;
                (failures, alone, true)
            }
        }
    }
}

fn same_row(outcome: &Outcome, message: &StoredMessage) -> bool {
    outcome.id == message.record.id && outcome.subscriber == message.subscriber
}

/// Runs `messages` of `unit` inside a savepoint.
async fn attempt<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    tx: &mut S::Tx,
    unit: &Unit<'_, S>,
    messages: &[&StoredMessage],
    lease: &Lease,
) -> Step {
    if let Err(error) = shared.store.savepoint(tx, SavepointStep::Open).await {
        return Step::Broken(None, error.to_string());
    }
    let ran = run::run_handler(shared, tx, box_kind, unit.handler.as_ref(), messages, lease).await;
    let released = match ran {
        Ok(records) => match shared.store.savepoint(tx, SavepointStep::Release).await {
            Ok(()) => return Step::Done(records),
            Err(error) => Err(error),
        },
        Err(failed) => Ok(failed),
    };
    let rolled_back = shared.store.savepoint(tx, SavepointStep::RollBack).await;
    match (released, rolled_back) {
        (Ok(failed), Ok(())) => Step::Failed(failed),
        (Err(release), Ok(())) => {
            Step::Failed(broken_by_handler("release its savepoint", &release))
        }
        (Err(release), Err(rollback)) => Step::Broken(
            Some(broken_by_handler("release its savepoint", &release)),
            rollback.to_string(),
        ),
        (Ok(mut failed), Err(rollback)) => {
            if failed.release {
                return Step::Broken(None, rollback.to_string());
            }
            failed.error = format!(
                "{}; then its savepoint could not be rolled back ({rollback}): the handler \
                 committed or rolled back the transaction itself, or broke its connection; \
                 never end the handler's transaction: bandeja commits it with the message's \
                 completion",
                failed.error
            );
            Step::Broken(Some(failed), rollback.to_string())
        }
    }
}
