//! One transaction per message: the handler runs, its row is marked COMPLETED, commit —
//! started only while the lease leaves time for it, committed only while it holds.

use tracing::Instrument;

use crate::context::Shared;
use crate::handler::ErasedHandler;
use crate::lease::Lease;
use crate::processing::run::{self, AttemptFailed};
use crate::record::{BoxKind, StoredMessage};
use crate::store::{Outcome, Store};

/// Runs one handler. `None` when the row was completed inside the handler's transaction
/// (or the lease was lost); otherwise the outcome to write back. A failed attempt spends
/// `spent` retries more than its own (a batched attempt it also caused).
pub(crate) async fn handle_one<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    message: &StoredMessage,
    lease: &Lease,
    spent: u32,
) -> Option<Outcome> {
    if !lease.may_start(message) {
        // The lease could not be renewed lately: do not start what may not finish in it.
        return Some(crate::attempt::release(message));
    }
    let handler = match run::handler_for(shared, box_kind, message) {
        Ok(handler) => handler,
        Err(outcome) => return Some(outcome),
    };
    async {
        match in_transaction(shared, box_kind, token, message, handler.as_ref(), lease).await {
            Ok(()) => {
                shared.conflicts.forget(message);
                None
            }
            Err(failed) if spent > 0 && !failed.release && !failed.transient => {
                let mut charged = message.clone();
                charged.retry_count = charged.retry_count.saturating_add(spent);
                Some(failed.outcome(shared, box_kind, &charged))
            }
            Err(failed) => Some(failed.outcome(shared, box_kind, message)),
        }
    }
    .instrument(run::span(message))
    .await
}

async fn in_transaction<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    message: &StoredMessage,
    handler: &dyn ErasedHandler<S>,
    lease: &Lease,
) -> Result<(), AttemptFailed> {
    let mut tx = shared
        .store
        .begin()
        .await
        .map_err(|e| AttemptFailed::from_store(&e))?;
    if !lease.may_start(message) {
        // Getting a connection took long enough (an outage) for the lease to lapse or the
        // row to be taken over.
        return Err(AttemptFailed::lease_running_out());
    }
    let emitted = run::run_handler(shared, &mut tx, box_kind, handler, &[message], lease).await?;
    if emitted.is_empty() {
        // (With messages emitted, `run_handler` checked before writing them.)
        run::check_transaction(shared, &mut tx).await?;
    }
    if !lease.holds(message) {
        // Rolled back: another worker may take the row over now.
        return Err(AttemptFailed::lease_running_out());
    }
    let held = shared
        .store
        .complete_in(
            &mut tx,
            box_kind,
            message.record.id,
            message.subscriber.as_deref(),
            token,
        )
        .await
        .map_err(|e| run::broken_by_handler("mark the message COMPLETED", &e))?;
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
        .map_err(|e| run::broken_by_handler("commit", &e))?;
    crate::fault::point("after-handler-commit");
    run::wake_for(shared, &emitted);
    Ok(())
}
