//! One transaction per chunk of a batch: each handler runs inside a savepoint (a failure
//! rolls back only its own work), then every successful row is marked COMPLETED in one
//! statement and the chunk commits once. Batch handlers get all their messages of the
//! chunk in one call (one savepoint); if that call fails, each message is tried alone.
//! Commits are what cost on PostgreSQL; this pays one per chunk instead of one per
//! message, while each handler stays its own unit of failure. A handler still running
//! after the patience is stopped (its savepoint rolled back) and set aside: the chunk
//! commits without it and the caller runs it again alone.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use crate::processing::handler::ErasedHandler;
use crate::processing::run::{self, AttemptFailed};
use crate::record::{BoxKind, MessageRecord, StoredMessage};
use crate::runtime::Shared;
use crate::store::{Outcome, Resolution, SavepointStep, Store};

/// What one savepoint covers: one message, or a batch handler's group of messages.
struct Unit<'m, S: Store> {
    handler: Arc<dyn ErasedHandler<S>>,
    messages: Vec<&'m StoredMessage>,
}

/// The chunk's messages as units; messages with no runnable handler become outcomes.
fn units<'m, S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    chunk: &[&'m StoredMessage],
    failures: &mut Vec<Outcome>,
) -> Vec<Unit<'m, S>> {
    let mut units: Vec<Unit<'m, S>> = Vec::new();
    let mut groups: BTreeMap<(String, String), usize> = BTreeMap::new();
    for &message in chunk {
        let handler = match run::handler_for(shared, box_kind, message) {
            Ok(handler) => handler,
            Err(outcome) => {
                failures.push(outcome);
                continue;
            }
        };
        if handler.batches() {
            let key = (
                message.subscriber.clone().unwrap_or_default(),
                message.record.inbox_tenant().to_string(),
            );
            if let Some(&index) = groups.get(&key) {
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
    units
}

/// Runs a unit inside a savepoint, stopped after `patience`. Outer `Err`: the transaction
/// itself broke.
async fn attempt<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    tx: &mut S::Tx,
    handler: &dyn ErasedHandler<S>,
    messages: &[&StoredMessage],
    patience: Duration,
) -> Result<Result<Vec<MessageRecord>, AttemptFailed>, AttemptFailed> {
    let broken = |e: crate::error::StoreError| AttemptFailed::from_store(&e);
    shared
        .store
        .savepoint(tx, SavepointStep::Open)
        .await
        .map_err(broken)?;
    match run::run_handler(shared, tx, box_kind, handler, messages, Some(patience)).await {
        Ok(records) => {
            shared
                .store
                .savepoint(tx, SavepointStep::Release)
                .await
                .map_err(broken)?;
            Ok(Ok(records))
        }
        Err(failed) => {
            shared
                .store
                .savepoint(tx, SavepointStep::RollBack)
                .await
                .map_err(broken)?;
            Ok(Err(failed))
        }
    }
}

/// What a chunk leaves to its caller: the failure outcomes to write back (after its
/// transaction: a failed handler's retry must not depend on it), and the messages set
/// aside as too slow for it, to run alone.
pub(crate) type ChunkLeft<'m> = (Vec<Outcome>, Vec<&'m StoredMessage>);

/// Handles a chunk of claimed rows in one transaction, each handler stopped after
/// `patience` (then set aside).
pub(crate) async fn handle_chunk<'m, S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    chunk: &[&'m StoredMessage],
    patience: Duration,
) -> ChunkLeft<'m> {
    let mut failures = Vec::new();
    let mut set_aside: Vec<&'m StoredMessage> = Vec::new();
    let units = units(shared, box_kind, chunk, &mut failures);
    if units.is_empty() {
        return (failures, set_aside);
    }
    let mut tx = match shared.store.begin().await {
        Ok(tx) => tx,
        Err(error) => {
            let every = units.iter().flat_map(|u| u.messages.iter());
            failures.extend(every.map(|m| again(m, &error.to_string())));
            return (failures, set_aside);
        }
    };
    let mut done: Vec<&StoredMessage> = Vec::with_capacity(chunk.len());
    let mut emitted: Vec<MessageRecord> = Vec::new();
    for (index, unit) in units.iter().enumerate() {
        let span = run::span(unit.messages[0]);
        let result = attempt(
            shared,
            box_kind,
            &mut tx,
            unit.handler.as_ref(),
            &unit.messages,
            // A batch handler's call gets the patience once per message it carries.
            patience.saturating_mul(u32::try_from(unit.messages.len()).unwrap_or(u32::MAX)),
        )
        .instrument(span.clone())
        .await;
        let result = match result {
            // Too slow to keep the chunk waiting: it runs again alone, after the commit.
            Ok(Err(failed)) if failed.set_aside => {
                tracing::info!(parent: &span, error = %failed.error, "handler set aside");
                shared
                    .slow
                    .mark(box_kind, unit.messages[0].subscriber.as_deref());
                set_aside.extend(unit.messages.iter().copied());
                Ok(Ok(Vec::new()))
            }
            // A group failed: find the culprit(s) by trying each message alone.
            Ok(Err(_)) if unit.messages.len() > 1 => {
                let mut outcome = Ok(Ok(()));
                for message in &unit.messages {
                    let alone = attempt(
                        shared,
                        box_kind,
                        &mut tx,
                        unit.handler.as_ref(),
                        &[message],
                        patience,
                    )
                    .instrument(run::span(message))
                    .await;
                    match alone {
                        Ok(Ok(records)) => {
                            done.push(message);
                            emitted.extend(records);
                        }
                        Ok(Err(failed)) if failed.set_aside => set_aside.push(message),
                        Ok(Err(failed)) => failures.push(failed.outcome(shared, box_kind, message)),
                        Err(broken) => {
                            outcome = Err(broken);
                            break;
                        }
                    }
                }
                outcome.map(|_: Result<(), ()>| Ok(Vec::new()))
            }
            Ok(Ok(records)) => {
                done.extend(unit.messages.iter().copied());
                Ok(Ok(records))
            }
            other => other,
        };
        match result {
            Ok(Ok(records)) => emitted.extend(records),
            Ok(Err(failed)) => failures.push(failed.outcome(shared, box_kind, unit.messages[0])),
            Err(broken) => {
                // The transaction itself failed (a savepoint could not be set or undone):
                // nothing of it can commit. These messages are tried again.
                drop(tx);
                // Those set aside run again alone anyway.
                let rest = units[index..]
                    .iter()
                    .flat_map(|u| u.messages.iter().copied())
                    .filter(|m| !set_aside.iter().any(|s| std::ptr::eq(*s, *m)));
                failures.retain(|f| {
                    !done
                        .iter()
                        .any(|m| m.record.id == f.id && m.subscriber == f.subscriber)
                });
                failures.extend(
                    rest.chain(done.iter().copied())
                        .map(|m| again(m, &broken.error)),
                );
                return (dedup(failures), set_aside);
            }
        }
    }
    if done.is_empty() {
        return (failures, set_aside);
    }
    let completions: Vec<Outcome> = done
        .iter()
        .map(|m| Outcome {
            id: m.record.id,
            subscriber: m.subscriber.clone(),
            resolution: Resolution::Completed,
        })
        .collect();
    let committed = match shared.store.resolve_in(&mut tx, box_kind, token, &completions).await {
        Ok(n) if usize::try_from(n).is_ok_and(|n| n == done.len()) => {
            shared.store.commit(tx).await.map_err(|e| e.to_string())
        }
        Ok(n) => Err(format!(
            "{} of {} leases were lost before the batch committed (another worker took them over): rolled back",
            done.len().saturating_sub(usize::try_from(n).unwrap_or(0)),
            done.len()
        )),
        Err(error) => Err(error.to_string()),
    };
    match committed {
        Ok(()) => {
            crate::fault::point("after-handler-commit");
            run::wake_for(shared, &emitted);
        }
        Err(error) => {
            tracing::warn!(%error, "batch transaction did not commit; its messages are tried again");
            failures.extend(done.into_iter().map(|m| again(m, &error)));
        }
    }
    (failures, set_aside)
}

/// One outcome per row (the last one wins).
fn dedup(outcomes: Vec<Outcome>) -> Vec<Outcome> {
    let mut seen: BTreeMap<(crate::envelope::MessageId, Option<String>), Outcome> = BTreeMap::new();
    for outcome in outcomes {
        seen.insert((outcome.id, outcome.subscriber.clone()), outcome);
    }
    seen.into_values().collect()
}

/// Back to PENDING at once, retry count unchanged: the attempt failed for a reason outside
/// the message (the batch transaction), so it does not spend one of its retries.
fn again(message: &StoredMessage, error: &str) -> Outcome {
    Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution: Resolution::Retry {
            retry_count: message.retry_count,
            delay: std::time::Duration::ZERO,
            error: format!("batch transaction failed: {error}"),
        },
    }
}
