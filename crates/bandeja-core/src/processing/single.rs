//! One transaction per message: the handler runs, its row is marked COMPLETED, commit.

use tracing::Instrument;

use crate::processing::handler::ErasedHandler;
use crate::processing::run::{self, AttemptFailed};
use crate::record::{BoxKind, StoredMessage};
use crate::runtime::Shared;
use crate::store::{Outcome, Store};

/// Runs one handler. `None` when the row was completed inside the handler's transaction
/// (or the lease was lost); otherwise the failure outcome to write back.
pub(crate) async fn handle_one<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    message: &StoredMessage,
) -> Option<Outcome> {
    let handler = match run::handler_for(shared, box_kind, message) {
        Ok(handler) => handler,
        Err(outcome) => return Some(outcome),
    };
    async {
        match in_transaction(shared, box_kind, token, message, handler.as_ref()).await {
            Ok(()) => None,
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
) -> Result<(), AttemptFailed> {
    let mut tx = shared
        .store
        .begin()
        .await
        .map_err(|e| AttemptFailed::from_store(&e))?;
    let emitted = run::run_handler(shared, &mut tx, box_kind, handler, &[message], None).await?;
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
    crate::fault::point("after-handler-commit");
    run::wake_for(shared, &emitted);
    Ok(())
}
