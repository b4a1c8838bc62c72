//! The orchestrator: the handler of [`SagaReply`] commands (one per service that runs
//! sagas) and the sweeper of late replies. Both move a saga the same way, in one
//! transaction: lock its row, run the [machine](super::machine), build the next command,
//! write the row over the version read, and put the command in the outbox. A crash before
//! the commit changes nothing (the reply is handled again, the timeout found again); after
//! it, the reply's inbox row is COMPLETED with the saga's move.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use tokio::sync::watch;

use super::definition::Definition;
use super::machine::{self, Input, Next};
use crate::background::Background;
use crate::emission::Outbox;
use crate::envelope::{Command, MessageId};
use crate::error::{HandlerError, StoreError};
use crate::processing::{CommandHandler, HandlerContext};
use crate::record::{BoxKind, MessageRecord};
use crate::saga::{SagaId, SagaPhase, SagaReply, SagaState};
use crate::sagas::SagaStore;

/// The subscriber name of the reply handler.
pub const REPLY_SUBSCRIBER: &str = "bandeja-sagas";

/// How often a process looks for sagas whose awaited reply is late.
pub const LATE_SAGAS_EVERY: Duration = Duration::from_millis(500);

/// The definitions a runtime runs, by name.
#[derive(Default)]
pub(crate) struct SagaBook {
    definitions: RwLock<BTreeMap<String, Arc<Definition>>>,
}

impl SagaBook {
    /// Adds `definition`; `false` if one of that name is there already.
    pub(crate) fn add(&self, definition: Arc<Definition>) -> bool {
        let Ok(mut book) = self.definitions.write() else {
            return false;
        };
        if book.contains_key(&definition.name) {
            return false;
        }
        book.insert(definition.name.clone(), definition);
        true
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<Definition>> {
        self.definitions.read().ok()?.get(name).cloned()
    }

    /// The names of the definitions, sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        self.definitions
            .read()
            .map(|book| book.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// Why a saga could not be moved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MoveError {
    #[error("saga {0} does not exist in this database")]
    Unknown(SagaId),
    #[error("saga {id} is a `{saga_type}`, which this process does not define: deploy a process that registers it (`BandejaBuilder::saga`), then retry this message")]
    Undefined { id: SagaId, saga_type: String },
    #[error("saga {0} changed meanwhile (another process moved it): tried again")]
    Conflict(SagaId),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Core(#[from] crate::error::Error),
}

impl MoveError {
    /// The handler's error: permanent for what retrying cannot fix.
    fn into_handler_error(self) -> HandlerError {
        match &self {
            MoveError::Unknown(_) | MoveError::Undefined { .. } => HandlerError::permanent(self),
            MoveError::Store(e) if !e.is_transient() => HandlerError::permanent(self),
            _ => HandlerError::retriable(self),
        }
    }
}

/// What moving a saga produced: the command to send, if any.
pub(crate) type Moved = Option<MessageRecord>;

/// Moves saga `id` on `input`, inside the caller's transaction on `conn`; `reply_data` is a
/// successful reply's data, `causation` the message that moved it.
pub(crate) async fn move_saga<S: SagaStore>(
    book: &SagaBook,
    store: &S,
    conn: &mut S::Conn,
    id: SagaId,
    input: Input<'_>,
    reply_data: Option<&serde_json::Value>,
    now: DateTime<Utc>,
) -> Result<Moved, MoveError> {
    let mut state = store
        .lock_saga(conn, id)
        .await?
        .ok_or(MoveError::Unknown(id))?;
    let definition = book
        .get(&state.saga_type)
        .ok_or_else(|| MoveError::Undefined {
            id,
            saga_type: state.saga_type.clone(),
        })?;
    if matches!(input, Input::Timeout) && state.deadline.is_none_or(|d| d > now) {
        // The reply came meanwhile.
        return Ok(None);
    }
    let causation = match input {
        Input::Reply {
            in_reply_to,
            message_id,
            ok,
            ..
        } => {
            if ok && state.awaits(in_reply_to) && state.phase == SagaPhase::Forward {
                if let Some(data) = reply_data {
                    let step = state.step;
                    if let Err(error) = definition.on_success(&mut state, step, data) {
                        // The reply's data does not fit the saga's: retrying changes nothing.
                        let why = format!(
                            "the reply of step {step} did not fit the saga's data: {error}"
                        );
                        machine::fail(&mut state, &definition.shapes, now, why);
                        write(store, conn, &mut state).await?;
                        return Ok(None);
                    }
                }
            }
            Some(message_id)
        }
        Input::Timeout => None,
    };
    let next = machine::advance(
        &mut state,
        &definition.shapes,
        definition.max_retries,
        input,
        now,
    );
    let record = match send_next(&definition, &mut state, next, causation, now) {
        Ok(record) => record,
        Err(error) => {
            // The step's command could not be built (its closure failed, the saga's data
            // no longer decodes): the saga stops FAILED, saying why, instead of retrying
            // what cannot change.
            let why = format!("the next command could not be built: {error}");
            machine::fail(&mut state, &definition.shapes, now, why);
            None
        }
    };
    write(store, conn, &mut state).await?;
    Ok(record)
}

/// Builds the command `next` asks for and records it as sent.
pub(crate) fn send_next(
    definition: &Definition,
    state: &mut SagaState,
    next: Next,
    causation: Option<MessageId>,
    now: DateTime<Utc>,
) -> Result<Moved, crate::error::Error> {
    let Next::Send { step, phase } = next else {
        return Ok(None);
    };
    let record = definition.command(state, step, phase, causation)?;
    machine::sent(state, &definition.shapes, record.id, now);
    Ok(Some(record))
}

/// Writes `state` over the version it was read at.
async fn write<S: SagaStore>(
    store: &S,
    conn: &mut S::Conn,
    state: &mut SagaState,
) -> Result<(), MoveError> {
    state.version += 1;
    if store.update_saga(conn, state).await? {
        Ok(())
    } else {
        Err(MoveError::Conflict(state.id))
    }
}

/// The handler of [`SagaReply`] commands.
pub(crate) struct Orchestrator<S> {
    pub(crate) store: S,
    pub(crate) book: Arc<SagaBook>,
}

impl<S: SagaStore> CommandHandler<S, SagaReply> for Orchestrator<S> {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        command: Command<SagaReply>,
    ) -> Result<(), HandlerError> {
        let reply = &command.payload;
        let input = Input::Reply {
            in_reply_to: reply.in_reply_to,
            message_id: command.id,
            ok: reply.ok,
            reason: reply.reason.as_deref(),
        };
        let moved = move_saga(
            &self.book,
            &self.store,
            ctx.conn(),
            reply.saga_id,
            input,
            Some(&reply.data),
            Utc::now(),
        )
        .await
        .map_err(MoveError::into_handler_error)?;
        if let Some(record) = moved {
            ctx.send_record(record)?;
        }
        Ok(())
    }
}

/// Finds the sagas whose awaited reply is late and moves each as timed out, in a
/// transaction of its own (its next command in the outbox in the same transaction).
pub(crate) struct LateSagas<S> {
    pub(crate) store: S,
    pub(crate) book: Arc<SagaBook>,
}

impl<S: SagaStore> LateSagas<S> {
    async fn sweep(&self, outbox: &Outbox<S>) -> Result<usize, MoveError> {
        let now = Utc::now();
        let types = self.book.names();
        let late = self.store.late_sagas(&types, now, 100).await?;
        let mut moved = 0;
        for id in late {
            // One saga that cannot move now must not hold up the others.
            match self.time_out(outbox, id, now).await {
                Ok(()) => moved += 1,
                // Another process moved it meanwhile: nothing to do.
                Err(MoveError::Conflict(_)) => {}
                Err(error) => {
                    tracing::warn!(saga = %id, %error, "a late saga could not be moved; it is tried again at the next sweep");
                }
            }
        }
        if moved > 0 {
            self.store.wakers().wake(BoxKind::OutboxCommands);
        }
        Ok(moved)
    }

    /// Moves late saga `id` as timed out, in a transaction of its own.
    async fn time_out(
        &self,
        outbox: &Outbox<S>,
        id: SagaId,
        now: DateTime<Utc>,
    ) -> Result<(), MoveError> {
        let mut tx = self.store.begin_move().await?;
        let record = move_saga(
            &self.book,
            &self.store,
            &mut tx,
            id,
            Input::Timeout,
            None,
            now,
        )
        .await?;
        if let Some(record) = record {
            outbox.send_records(&mut tx, vec![record]).await?;
        }
        self.store.commit(tx).await?;
        Ok(())
    }
}

impl<S: SagaStore> Background<S> for LateSagas<S> {
    fn name(&self) -> &'static str {
        "late sagas"
    }

    fn run(
        self: Arc<Self>,
        outbox: Outbox<S>,
        mut stop: watch::Receiver<bool>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            loop {
                if let Err(error) = self.sweep(&outbox).await {
                    tracing::warn!(%error, "looking for late saga replies failed; trying again");
                }
                tokio::select! {
                    () = tokio::time::sleep(LATE_SAGAS_EVERY) => {}
                    _ = stop.changed() => return,
                }
                if *stop.borrow() {
                    return;
                }
            }
        })
    }
}
