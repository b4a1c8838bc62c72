//! One cycle of an inbox worker: claim → each handler in its own transaction (which also
//! marks its row COMPLETED) → failures written back in one statement.

use std::panic::AssertUnwindSafe;

use futures::{FutureExt, StreamExt};
use tracing::Instrument;

use crate::attempt;
use crate::error::{FailureKind, Result};
use crate::processing::handler::HandlerContext;
use crate::record::{BoxKind, StoredMessage};
use crate::runtime::Shared;
use crate::store::{ClaimRequest, Outcome, Store};
use crate::tenant;
use crate::worker::Claimed;

/// Runs one cycle on `box_kind` (an inbox). Returns how many rows were claimed.
pub(crate) async fn cycle<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    claimed_slot: &Claimed,
) -> Result<usize> {
    let config = shared.config.group(box_kind.group());
    let token = shared.claim_token();
    let request = ClaimRequest {
        worker_id: &token,
        limit: config.batch_size,
        lease: config.lock_at_most_for,
        ordered: config.ordered,
    };
    let claimed = shared.store.claim(box_kind, &request).await?;
    if claimed.is_empty() {
        return Ok(0);
    }
    claimed_slot.set(&token, &claimed);
    let count = claimed.len();
    let attempts: Vec<_> = claimed
        .iter()
        .map(|message| handle_one(shared, box_kind, &token, message))
        .collect();
    let results: Vec<Option<Outcome>> = futures::stream::iter(attempts)
        .buffer_unordered(shared.handler_concurrency)
        .collect()
        .await;
    let failures: Vec<Outcome> = results.into_iter().flatten().collect();
    if !failures.is_empty() {
        shared.store.resolve(box_kind, &token, &failures).await?;
    }
    claimed_slot.clear();
    Ok(count)
}

/// Runs one handler. `None` when the row was completed inside the handler's transaction
/// (or the lease was lost); otherwise the failure outcome to write back.
async fn handle_one<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    message: &StoredMessage,
) -> Option<Outcome> {
    let config = shared.config.group(box_kind.group());
    if let Some(outcome) = attempt::exhausted_by_crashes(message, config) {
        return Some(outcome);
    }
    let subscriber = message.subscriber.as_deref().unwrap_or_default();
    let span = tracing::info_span!(
        "bandeja.handle",
        message_id = %message.record.id,
        message_type = %message.record.message_type,
        subscriber,
        tenant = %message.record.inbox_tenant(),
        correlation_id = message.record.headers.correlation_id.as_deref().unwrap_or(""),
        causation_id = message.record.headers.causation_id.map(|c| c.to_string()).unwrap_or_default(),
        attempt = message.retry_count + 1,
    );
    async {
        let Some(registered) = shared.registry.find(box_kind.kind(), &message.record.message_type, subscriber) else {
            let error = format!(
                "no subscriber `{subscriber}` for `{}` is registered in this process: register it again, or retry the message after deploying it",
                message.record.message_type
            );
            return Some(attempt::failure(message, config, FailureKind::Permanent, error));
        };
        let handler = registered.handler.clone();
        // A handler may not outlive its lease: past it, another worker may take the row over.
        let timeout = config.handler_timeout.min(config.lock_at_most_for);
        match run_in_transaction(shared, box_kind, token, message, handler.as_ref(), timeout).await {
            Ok(()) => None,
            Err(failed) if failed.transient => {
                tracing::info!(error = %failed.error, "transient conflict; trying again without spending a retry");
                Some(attempt::transient(message, config, failed.error))
            }
            Err(failed) => {
                tracing::warn!(error = %failed.error, kind = ?failed.kind, "handler failed");
                Some(attempt::failure(message, config, failed.kind, failed.error))
            }
        }
    }
    .instrument(span)
    .await
}

/// Why an attempt did not complete.
struct AttemptFailed {
    kind: FailureKind,
    /// A lock conflict or an unreachable database, not the message's fault: retried
    /// without spending a retry.
    transient: bool,
    error: String,
}

impl AttemptFailed {
    fn retriable(error: String) -> Self {
        AttemptFailed {
            kind: FailureKind::Retriable,
            transient: false,
            error,
        }
    }

    fn from_store(error: &crate::error::StoreError) -> Self {
        AttemptFailed {
            kind: FailureKind::Retriable,
            transient: error.is_transient(),
            error: error.to_string(),
        }
    }
}

async fn run_in_transaction<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    message: &StoredMessage,
    handler: &dyn crate::processing::handler::ErasedHandler<S>,
    timeout: std::time::Duration,
) -> Result<(), AttemptFailed> {
    let mut tx = shared
        .store
        .begin()
        .await
        .map_err(|e| AttemptFailed::from_store(&e))?;
    let mut ctx = HandlerContext::<S>::new(&mut tx, message);
    let run = tenant::scope(
        message.record.inbox_tenant().clone(),
        handler.call(&mut ctx, message),
    );
    match tokio::time::timeout(timeout, AssertUnwindSafe(run).catch_unwind()).await {
        Err(_elapsed) => {
            return Err(AttemptFailed::retriable(format!(
                "handler timed out after {timeout:?} (handler-timeout, capped by lock-at-most-for)"
            )))
        }
        Ok(Err(panic)) => {
            return Err(AttemptFailed::retriable(format!(
                "handler panicked: {}",
                panic_text(&panic)
            )))
        }
        Ok(Ok(Err(error))) => {
            let transient = shared.store.is_transient(error.source.as_ref());
            return Err(AttemptFailed {
                kind: error.kind,
                transient,
                error: error.to_string(),
            });
        }
        Ok(Ok(Ok(()))) => {}
    }
    let emitted = ctx.take_emitted();
    for kind in [
        crate::record::MessageKind::Event,
        crate::record::MessageKind::Command,
    ] {
        let batch: Vec<_> = emitted.iter().filter(|r| r.kind == kind).cloned().collect();
        if !batch.is_empty() {
            shared
                .store
                .insert_outbox(&mut *tx, kind, &batch)
                .await
                .map_err(|e| AttemptFailed::from_store(&e))?;
        }
    }
    let subscriber = message.subscriber.as_deref();
    let held = shared
        .store
        .complete_in(&mut tx, box_kind, message.record.id, subscriber, token)
        .await
        .map_err(|e| AttemptFailed::from_store(&e))?;
    if !held {
        tracing::warn!(
            "lease lost before completion (another worker took the message over): rolled back"
        );
        return Ok(());
    }
    shared
        .store
        .commit(tx)
        .await
        .map_err(|e| AttemptFailed::from_store(&e))?;
    for record in &emitted {
        shared.store.wakers().wake(record.kind.outbox());
    }
    Ok(())
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-text panic payload".to_owned()
    }
}
