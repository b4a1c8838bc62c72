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

use crate::context::Shared;
use crate::handler::ErasedHandler;
use crate::lease::Lease;
use crate::processing::run::broken_by_handler;
use crate::processing::run::{self, AttemptFailed};
use crate::record::{BoxKind, MessageRecord, StoredMessage};
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
    began: Notify,
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
            began: Notify::new(),
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

    /// Resolves when the chunk's run has begun (it holds its permit).
    pub(crate) async fn began(&self) {
        self.began.notified().await;
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
        self.began.notify_one();
        let _finishing = Finishing(&self.finished);
        let mut failures = Vec::new();
        if self.units.is_empty() {
            return (failures, Vec::new(), false);
        }
        if !lease.time_to_start() {
            failures.extend(self.take_rest().into_iter().map(crate::attempt::release));
            return (failures, Vec::new(), false);
        }
        let mut tx = match shared.store.begin().await {
            Ok(tx) => tx,
            Err(error) => {
                tracing::warn!(%error, "could not begin a batch transaction; its messages are released");
                failures.extend(self.take_rest().into_iter().map(crate::attempt::release));
                return (failures, Vec::new(), false);
            }
        };
        // Whether the transaction committed can be asked later, if a handler ends it: the
        // mark is taken with the first handler's savepoint (one round trip where the store
        // allows), or, on a store that marks lazily, once a handler has written.
        let lazily = shared.store.marks_lazily();
        let mut mark = None;
        let mut to_mark = !lazily;
        let mut done: Vec<&'m StoredMessage> = Vec::new();
        let mut emitted: Vec<MessageRecord> = Vec::new();
        while let Some(unit) = self.take_next() {
            if !lease.time_to_start() {
                failures.extend(unit.messages.iter().copied().map(crate::attempt::release));
                failures.extend(self.take_rest().into_iter().map(crate::attempt::release));
                break;
            }
            if !unit.messages.iter().all(|m| lease.still_held(m)) {
                // Taken over while renewals were failing: no longer this worker's.
                tracing::warn!("a row of the batch was taken over by another worker; not started");
                continue;
            }
            let span = run::span(unit.messages[0]);
            let mut savepoint = Savepoint::ToOpen;
            if to_mark {
                // No handler has run in this transaction yet: nothing to attribute.
                to_mark = false;
                match shared.store.mark_and_open(&mut tx).await {
                    Ok(marked) => {
                        mark = marked;
                        savepoint = Savepoint::Open;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "could not open a batch transaction's first savepoint; its messages are released");
                        failures.extend(unit.messages.iter().copied().map(crate::attempt::release));
                        failures.extend(self.take_rest().into_iter().map(crate::attempt::release));
                        return (failures, Vec::new(), false);
                    }
                }
            }
            let step = attempt(
                shared,
                box_kind,
                &mut tx,
                unit,
                &unit.messages,
                lease,
                savepoint,
            )
            .instrument(span.clone())
            .await;
            // `Some((error, guilty, unattributed))` once the transaction is gone.
            let mut broken: Option<(String, Guilty<'m>, bool)> = None;
            match step {
                Step::Done(records) => {
                    done.extend(unit.messages.iter().copied());
                    emitted.extend(records);
                    if lazily && mark.is_none() {
                        mark = mark_of(shared, &mut tx).await;
                    }
                }
                // A group failed: find the culprit(s) by trying each message alone.
                Step::Failed(_) if unit.messages.len() > 1 => {
                    for &message in &unit.messages {
                        let alone = Savepoint::ToOpen;
                        match attempt(shared, box_kind, &mut tx, unit, &[message], lease, alone)
                            .instrument(run::span(message))
                            .await
                        {
                            Step::Done(records) => {
                                done.push(message);
                                emitted.extend(records);
                                if lazily && mark.is_none() {
                                    mark = mark_of(shared, &mut tx).await;
                                }
                            }
                            Step::Failed(failed) => {
                                failures.push(failed.outcome(shared, box_kind, message));
                            }
                            Step::Broken(guilty, error) => {
                                if guilty.is_none() {
                                    done.push(message);
                                }
                                broken = Some((error, guilty.map(|g| (message, g)), false));
                                break;
                            }
                        }
                    }
                }
                Step::Failed(failed) => {
                    failures.push(failed.outcome(shared, box_kind, unit.messages[0]));
                }
                Step::Broken(Some(failed), error) if unit.messages.len() == 1 => {
                    broken = Some((error, Some((unit.messages[0], failed)), false));
                }
                Step::Broken(guilty, error) => {
                    // A group, or not a handler's doing (the connection): each message
                    // runs again alone; only a group's failure is still to be attributed.
                    done.extend(unit.messages.iter().copied());
                    broken = Some((error, None, guilty.is_some()));
                }
            }
            if let Some((error, guilty, unattributed)) = broken {
                drop(tx);
                let broke = Broke {
                    mark,
                    own_commit: false,
                    guilty,
                    error: &error,
                };
                let mut alone = self
                    .after_break(shared, broke, done, &emitted, &mut failures)
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
    /// of `done` (the messages handled in it) and of the guilty handler's, if one broke
    /// it. If the transaction committed nonetheless (a handler ran `COMMIT` itself, or a
    /// commit whose answer was lost), `done` is marked COMPLETED and the guilty message
    /// FAILED (its work is in: running it again would apply it twice); if it certainly did
    /// not, `done` is returned to run again alone and the guilty one retried; if that
    /// cannot be known now, `done` goes back to PENDING through the guarded outcome write
    /// (which changes nothing if it did commit) as a bounded transient conflict, and the
    /// guilty one is FAILED. Never run twice on a guess.
    async fn after_break(
        &self,
        shared: &Shared<S>,
        broke: Broke<'_, 'm>,
        done: Vec<&'m StoredMessage>,
        emitted: &[MessageRecord],
        outcomes: &mut Vec<Outcome>,
    ) -> Vec<&'m StoredMessage> {
        let Broke {
            mark,
            own_commit,
            guilty,
            error,
        } = broke;
        let done: Vec<&'m StoredMessage> = done
            .into_iter()
            .filter(|m| !outcomes.iter().any(|f| same_row(f, m)))
            .collect();
        if done.is_empty() && guilty.is_none() {
            return Vec::new();
        }
        let committed = match mark {
            // The chunk's own commit refused by the database (a constraint, a conflict):
            // it certainly did not commit. What a handler did to the transaction, or a
            // commit whose answer was lost, only the mark can tell.
            _ if own_commit => Some(false),
            None => None,
            Some(mark) => shared.store.committed(mark).await.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "could not learn whether a broken batch transaction committed");
                None
            }),
        };
        if let Some((message, failed)) = guilty {
            outcomes.push(match committed {
                Some(false) => failed.outcome(shared, message.box_kind, message),
                _ => ended_by_handler(message, committed, &failed.error),
            });
        }
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
                outcomes.extend(done.into_iter().map(|m| {
                    AttemptFailed {
                        kind: crate::error::FailureKind::Retriable,
                        transient: true,
                        error: format!("batch transaction failed: {error}"),
                        release: false,
                    }
                    .outcome(shared, m.box_kind, m)
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
            failures.extend(done.into_iter().map(crate::attempt::release));
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
                failures.extend(done.into_iter().map(crate::attempt::release));
                return (failures, Vec::new(), false);
            }
            Err(error) => {
                // Nothing was committed: the transaction is dropped (rolled back).
                tracing::warn!(%error, "could not mark a batch COMPLETED; its messages run again alone");
                drop(tx);
                let text = error.to_string();
                let broke = Broke {
                    mark,
                    own_commit: !error.is_transient(),
                    guilty: None,
                    error: &text,
                };
                let alone = self
                    .after_break(shared, broke, done, emitted, &mut failures)
                    .await;
                return (failures, alone, !error.is_transient());
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
                let text = error.to_string();
                let broke = Broke {
                    mark,
                    own_commit: !error.is_transient(),
                    guilty: None,
                    error: &text,
                };
                let alone = self
                    .after_break(shared, broke, done, emitted, &mut failures)
                    .await;
                (failures, alone, !error.is_transient())
            }
        }
    }
}

/// The message whose handler broke the chunk's transaction, and how its attempt failed.
type Guilty<'m> = Option<(&'m StoredMessage, AttemptFailed)>;

/// How a chunk's transaction broke, for [`Chunk::after_break`].
struct Broke<'e, 'm> {
    /// Its mark ([`Store::transaction_mark`]), if the store has marks.
    mark: Option<i64>,
    /// Whether the chunk's own `COMMIT` (or completion write) was refused by the database
    /// (not a lost connection): then it certainly did not commit.
    own_commit: bool,
    /// The handler that broke it, and how its attempt failed.
    guilty: Guilty<'m>,
    error: &'e str,
}

/// The outcome of a message whose handler ended the batch's transaction, when that
/// transaction committed (`Some(true)`) or may have: FAILED, since running it again could
/// apply its work twice.
fn ended_by_handler(message: &StoredMessage, committed: Option<bool>, error: &str) -> Outcome {
    let fate = if committed == Some(true) {
        "the transaction committed, with this handler's work"
    } else {
        "whether the transaction committed cannot be known"
    };
    Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution: Resolution::Failed {
            retry_count: message.retry_count,
            error: format!(
                "{error} ({fate}: not run again automatically, so that its work is not \
                 applied twice; fix the handler, then retry the message if its work must run \
                 again)"
            ),
        },
    }
}

fn same_row(outcome: &Outcome, message: &StoredMessage) -> bool {
    outcome.id == message.record.id && outcome.subscriber == message.subscriber
}

/// The transaction's mark ([`Store::transaction_mark`]), `None` without one.
async fn mark_of<S: Store>(shared: &Shared<S>, tx: &mut S::Tx) -> Option<i64> {
    shared
        .store
        .transaction_mark(tx)
        .await
        .unwrap_or_else(|error| {
            tracing::debug!(%error, "no transaction mark");
            None
        })
}

/// Whether the savepoint of an [`attempt`] is still to be opened.
enum Savepoint {
    /// Opened already, with the transaction's mark ([`Store::mark_and_open`]).
    Open,
    /// The attempt opens it.
    ToOpen,
}

/// Runs `messages` of `unit` inside a savepoint.
async fn attempt<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    tx: &mut S::Tx,
    unit: &Unit<'_, S>,
    messages: &[&StoredMessage],
    lease: &Lease,
    savepoint: Savepoint,
) -> Step {
    if let Savepoint::ToOpen = savepoint {
        if let Err(error) = shared.store.savepoint(tx, SavepointStep::Open).await {
            return Step::Broken(None, error.to_string());
        }
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
    if let Err(rollback) = &rolled_back {
        if rollback.is_transient() {
            // The connection, not the handler.
            return Step::Broken(None, rollback.to_string());
        }
    }
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
