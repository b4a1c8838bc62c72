//! One transaction per chunk of a batch: each handler runs inside a savepoint (a failure
//! rolls back only its own work), then every successful row is marked COMPLETED in one
//! statement and the chunk commits once. Commits are what cost on PostgreSQL; this pays
//! one per chunk instead of one per message, while each handler stays its own unit of
//! failure.

use tracing::Instrument;

use crate::processing::run::{self, AttemptFailed};
use crate::record::{BoxKind, MessageRecord, StoredMessage};
use crate::runtime::Shared;
use crate::store::{Outcome, Resolution, SavepointStep, Store};

/// Handles a chunk of claimed rows in one transaction. Returns the failure outcomes to
/// write back (after this transaction: a failed handler's retry must not depend on it).
pub(crate) async fn handle_chunk<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    chunk: &[StoredMessage],
) -> Vec<Outcome> {
    let mut failures = Vec::new();
    let mut tx = match shared.store.begin().await {
        Ok(tx) => tx,
        Err(error) => {
            return every(chunk, |m| {
                AttemptFailed::from_store(&error).outcome(shared, box_kind, m)
            })
        }
    };
    let mut done: Vec<&StoredMessage> = Vec::with_capacity(chunk.len());
    let mut emitted: Vec<MessageRecord> = Vec::new();
    for (index, message) in chunk.iter().enumerate() {
        let handler = match run::handler_for(shared, box_kind, message) {
            Ok(handler) => handler,
            Err(outcome) => {
                failures.push(outcome);
                continue;
            }
        };
        let step: Result<Result<Vec<MessageRecord>, AttemptFailed>, AttemptFailed> = async {
            shared
                .store
                .savepoint(&mut tx, SavepointStep::Open)
                .await
                .map_err(|e| AttemptFailed::from_store(&e))?;
            match run::run_handler(
                shared,
                &mut tx,
                handler.as_ref(),
                message,
                run::timeout(shared, box_kind),
            )
            .await
            {
                Ok(records) => {
                    shared
                        .store
                        .savepoint(&mut tx, SavepointStep::Release)
                        .await
                        .map_err(|e| AttemptFailed::from_store(&e))?;
                    Ok(Ok(records))
                }
                Err(failed) => {
                    shared
                        .store
                        .savepoint(&mut tx, SavepointStep::RollBack)
                        .await
                        .map_err(|e| AttemptFailed::from_store(&e))?;
                    Ok(Err(failed))
                }
            }
        }
        .instrument(run::span(message))
        .await;
        match step {
            Ok(Ok(records)) => {
                done.push(message);
                emitted.extend(records);
            }
            Ok(Err(failed)) => failures.push(failed.outcome(shared, box_kind, message)),
            Err(broken) => {
                // The transaction itself failed (a savepoint could not be set or undone):
                // nothing of it can commit. This message and the rest are tried again.
                drop(tx);
                let rest = chunk[index..].iter().chain(done.iter().copied());
                failures.extend(rest.map(|m| again(m, &broken.error)));
                return failures;
            }
        }
    }
    if done.is_empty() {
        return failures;
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
    let committed = match marked {
        Ok(n) if usize::try_from(n).is_ok_and(|n| n == done.len()) => {
            shared.store.commit(tx).await.map_err(|e| e.to_string())
        }
        Ok(n) => Err(format!(
            "{} of {} leases were lost before the batch committed (another worker took them over): rolled back",
            done.len() - usize::try_from(n).unwrap_or(0),
            done.len()
        )),
        Err(error) => Err(error.to_string()),
    };
    match committed {
        Ok(()) => run::wake_for(shared, &emitted),
        Err(error) => {
            tracing::warn!(%error, "batch transaction did not commit; its messages are tried again");
            failures.extend(done.into_iter().map(|m| again(m, &error)));
        }
    }
    failures
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

fn every(chunk: &[StoredMessage], outcome: impl Fn(&StoredMessage) -> Outcome) -> Vec<Outcome> {
    chunk.iter().map(outcome).collect()
}
