//! Running one handler: the checks before it, the span around it, the timeout, panics
//! caught, and the classification of what went wrong.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;

use crate::attempt;
use crate::config::{format_duration, WorkerConfig};
use crate::context::Shared;
use crate::error::{FailureKind, StoreError};
use crate::handler::{ErasedHandler, HandlerContext};
use crate::lease::Lease;
use crate::record::{BoxKind, MessageKind, MessageRecord, StoredMessage};
use crate::store::{Outcome, Store, TransactionState};
use crate::telemetry;
use crate::tenant;

/// Why an attempt did not complete.
pub(crate) struct AttemptFailed {
    pub(crate) kind: FailureKind,
    /// A lock conflict or an unreachable database, not the message's fault: retried
    /// without spending a retry (up to [`FREE_CONFLICTS`](crate::conflicts::FREE_CONFLICTS)
    /// in a row).
    pub(crate) transient: bool,
    pub(crate) error: String,
    /// Not the message's fault and nothing was done: its lease is running out unrenewed,
    /// so the row is released (back to PENDING at once, nothing spent) for whichever
    /// worker can still reach the database.
    pub(crate) release: bool,
}

impl AttemptFailed {
    pub(crate) fn retriable(error: String) -> Self {
        AttemptFailed {
            kind: FailureKind::Retriable,
            transient: false,
            error,
            release: false,
        }
    }

    pub(crate) fn from_store(error: &StoreError) -> Self {
        AttemptFailed {
            kind: FailureKind::Retriable,
            transient: error.is_transient(),
            error: error.to_string(),
            release: false,
        }
    }

    /// The lease could not be renewed and is running out: stop, release.
    pub(crate) fn lease_running_out() -> Self {
        AttemptFailed {
            kind: FailureKind::Retriable,
            transient: true,
            error: "the lease could not be renewed and was about to run out (database unreachable?): stopped and released before another worker could take it over".to_owned(),
            release: true,
        }
    }

    /// The outcome to write back.
    pub(crate) fn outcome<S: Store>(
        self,
        shared: &Shared<S>,
        box_kind: BoxKind,
        message: &StoredMessage,
    ) -> Outcome {
        let config = shared.config.group(box_kind);
        if self.release {
            tracing::warn!(error = %self.error, "released");
            return attempt::release(message);
        }
        if self.transient && shared.conflicts.free(message) {
            return attempt::transient(message, config, self.error);
        }
        shared.conflicts.forget(message);
        let error = if self.transient {
            format!(
                "{} (a transient conflict {} times in a row: counted as a failed attempt)",
                self.error,
                crate::conflicts::FREE_CONFLICTS + 1
            )
        } else {
            self.error
        };
        // Logged where the outcome is decided: "will retry at …" or "FAILED after …".
        attempt::failure(message, config, self.kind, error)
    }
}

/// The handler of a claimed row, or the outcome that ends it without running one (retries
/// exhausted by crashes; a subscriber this process does not run: released).
pub(crate) fn handler_for<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    message: &StoredMessage,
) -> Result<Arc<dyn ErasedHandler<S>>, Outcome> {
    let config = shared.config.group(box_kind);
    if let Some(outcome) = attempt::exhausted_by_crashes(message, config) {
        return Err(outcome);
    }
    let subscriber = message.subscriber.as_deref().unwrap_or_default();
    match shared
        .registry
        .find(box_kind.kind(), &message.record.message_type, subscriber)
        .filter(|registered| {
            registered
                .tenant
                .as_ref()
                .is_none_or(|t| t == message.record.inbox_tenant())
        }) {
        Some(registered) => Ok(registered.handler.clone()),
        // Claims take only the rows of subscribers this process runs (and reception's
        // rejected rows, settled before the handlers), so this is a store that ignored the
        // claim's subscriber filter: the row is put back for a process that runs it, never
        // FAILED for lacking a subscriber here.
        None => {
            tracing::warn!(%subscriber, message_id = %message.record.id, "claimed a row of a subscriber this process does not run: released for a process that runs it");
            Err(attempt::release(message))
        }
    }
}

/// The tracing span of one handling: the message's id, type and attempt, and the fields it
/// has of subscriber, tenant (other than the default one), correlation and causation ids
/// and W3C trace id, so one request's story can be followed. A field the message lacks is
/// left unrecorded (not printed), never printed empty.
pub(crate) fn span(message: &StoredMessage) -> tracing::Span {
    let span = tracing::info_span!(
        "bandeja.handle",
        message_id = %message.record.id,
        message_type = %message.record.message_type,
        subscriber = tracing::field::Empty,
        tenant = tracing::field::Empty,
        correlation_id = tracing::field::Empty,
        causation_id = tracing::field::Empty,
        trace_id = tracing::field::Empty,
        attempt = message.retry_count + 1,
    );
    if let Some(subscriber) = &message.subscriber {
        span.record("subscriber", subscriber.as_str());
    }
    telemetry::record_message_fields(&span, &message.record, message.record.inbox_tenant());
    span
}

/// The error of an attempt stopped after `limit`, naming the setting that gave the limit
/// (the subscriber's `handler-timeouts` entry or the group's `handler-timeout`).
fn timed_out(
    group: BoxKind,
    config: &WorkerConfig,
    subscriber: Option<&str>,
    limit: Duration,
) -> String {
    let setting = match subscriber.filter(|name| config.handler_timeouts.contains_key(*name)) {
        Some(name) => format!("`{}.handler-timeouts.{name}`", group.key()),
        None => format!("`{}.handler-timeout`", group.key()),
    };
    format!(
        "handler timed out after {} (the limit set by {setting}); its work was rolled back",
        format_duration(limit)
    )
}

/// Runs the handler on `tx` in the messages' tenant scope (several messages only for a
/// batch handler) within its time limit (see [`WorkerConfig::effective_handler_timeout`]),
/// then writes what it emitted into the outbox on the same transaction. Returns what it
/// emitted (to wake the dispatchers after the commit). The handler is stopped early only
/// if `lease` runs out unrenewed; its time per message is recorded in the pace.
pub(crate) async fn run_handler<S: Store>(
    shared: &Shared<S>,
    tx: &mut S::Tx,
    box_kind: BoxKind,
    handler: &dyn ErasedHandler<S>,
    messages: &[&StoredMessage],
    lease: &Lease,
) -> Result<Vec<MessageRecord>, AttemptFailed> {
    let Some(first) = messages.first() else {
        return Ok(Vec::new());
    };
    // Several messages only for a batch handler: one subscriber, one limit.
    let group = box_kind;
    let config = shared.config.group(group);
    let subscriber = first.subscriber.as_deref();
    let timeout = config.effective_handler_timeout(subscriber);
    let mut ctx = HandlerContext::<S>::new(
        tx,
        first,
        shared.max_payload_bytes,
        shared.routing.as_deref(),
    );
    let call = async {
        if handler.batches() {
            handler.call_many(&mut ctx, messages).await
        } else {
            handler.call(&mut ctx, first).await
        }
    };
    // Messages emitted by the handler continue the handled message's trace.
    let handling = telemetry::trace::for_handling(&first.record.headers);
    let run = tenant::scope(
        first.record.inbox_tenant().clone(),
        telemetry::trace::scope(handling, call),
    );
    let started = std::time::Instant::now();
    // The lease first: a handler is not even polled once its lease is running out.
    let outcome = tokio::select! {
        biased;
        () = lease.running_out() => return Err(AttemptFailed::lease_running_out()),
        outcome = tokio::time::timeout(timeout, AssertUnwindSafe(run).catch_unwind()) => outcome,
    };
    shared
        .pace
        .record(box_kind, subscriber, started.elapsed(), messages.len());
    crate::fault::point("inside-handler");
    match outcome {
        Err(_elapsed) => {
            return Err(AttemptFailed::retriable(timed_out(
                group, config, subscriber, timeout,
            )))
        }
        Ok(Err(panic)) => {
            return Err(AttemptFailed::retriable(format!(
                "handler panicked: {}",
                panic_text(&panic)
            )))
        }
        Ok(Ok(Err(error))) => {
            let transient = shared.store.is_transient(error.get_ref());
            return Err(AttemptFailed {
                kind: error.kind(),
                transient,
                error: error.to_string(),
                release: false,
            });
        }
        Ok(Ok(Ok(()))) => {}
    }
    // Checked when the handler emitted them, by the rules of `Outbox::write`
    // (`check_outgoing`: size, route, storable text, one id per insert).
    let mut emitted = ctx.take_emitted();
    if !emitted.is_empty() {
        // Written into a transaction the handler ended, they would commit on their own.
        check_transaction(shared, tx).await?;
    }
    for record in &mut emitted {
        telemetry::trace::stamp(&mut record.headers, Some(handling));
    }
    for kind in [MessageKind::Event, MessageKind::Command] {
        let batch: Vec<_> = emitted.iter().filter(|r| r.kind == kind).cloned().collect();
        if !batch.is_empty() {
            shared
                .store
                .insert_outbox(&mut **tx, kind, &batch)
                .await
                .map_err(|e| {
                    AttemptFailed::from_store(&crate::emission::explain_duplicate(e, kind, &batch))
                })?;
        }
    }
    Ok(emitted)
}

/// The error of a transaction that could not complete after its handler returned `Ok`:
/// the handler's fault (a statement inside it failed and it went on, or it ended the
/// transaction itself), said so with what to do.
pub(crate) fn broken_by_handler(step: &str, error: &crate::error::StoreError) -> AttemptFailed {
    let mut failed = AttemptFailed::from_store(error);
    if failed.transient {
        // A conflict or a lost connection: not the handler's doing.
        return failed;
    }
    failed.error = handler_broke_it(&format!("could not {step}: {error}"));
    failed
}

/// What to tell the author of a handler whose transaction `what` after it returned `Ok`.
fn handler_broke_it(what: &str) -> String {
    format!(
        "the handler returned Ok, but its transaction {what}. A statement \
         inside the handler failed and the handler went on (on PostgreSQL that aborts the \
         whole transaction), or the handler committed or rolled back the transaction itself. \
         Run a statement that may fail inside a savepoint of its own (SAVEPOINT / ROLLBACK TO \
         SAVEPOINT), or avoid the error (INSERT … ON CONFLICT DO NOTHING); never commit or \
         roll back the handler's transaction: bandeja commits it with the message's \
         completion"
    )
}

/// Fails the attempt if the handler left its transaction aborted or ended it itself (see
/// [`Store::transaction_state`]): aborted, it is retried (nothing of it committed); ended,
/// it is FAILED, since its work may have committed and running it again could apply it
/// twice.
pub(crate) async fn check_transaction<S: Store>(
    shared: &Shared<S>,
    tx: &mut S::Tx,
) -> Result<(), AttemptFailed> {
    match shared.store.transaction_state(tx).await {
        Ok(TransactionState::Open) => Ok(()),
        Ok(TransactionState::Aborted) => Err(AttemptFailed::retriable(handler_broke_it(
            "was aborted by a statement that failed inside the handler",
        ))),
        Ok(TransactionState::Ended) => Err(AttemptFailed {
            kind: FailureKind::Permanent,
            transient: false,
            error: handler_broke_it(
                "was ended by the handler itself (its work may have committed, so it is not \
                 run again automatically: fix the handler, then retry the message)",
            ),
            release: false,
        }),
        Err(error) => Err(AttemptFailed::from_store(&error)),
    }
}

/// Counts what committed handlers emitted and wakes the dispatchers of it.
pub(crate) fn wake_for<S: Store>(shared: &Shared<S>, emitted: &[MessageRecord]) {
    if emitted.is_empty() {
        return;
    }
    for kind in [MessageKind::Event, MessageKind::Command] {
        if emitted.iter().any(|r| r.kind == kind) {
            telemetry::emitted(kind.outbox(), emitted.iter().filter(|r| r.kind == kind));
            shared.store.wakers().wake(kind.outbox());
        }
    }
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
