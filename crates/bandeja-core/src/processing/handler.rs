//! The handler traits users implement, and the context a handler runs in: the transaction
//! that will mark its inbox row COMPLETED.

use std::marker::PhantomData;

use async_trait::async_trait;

use crate::envelope::{Command, Event, MessageId, Payload};
use crate::error::{HandlerError, Result};
use crate::record::{MessageRecord, StoredMessage, DEFAULT_MAX_PAYLOAD_BYTES};
use crate::store::Store;
use crate::tenant::TenantId;

/// Reacts to events of type `T`. Runs inside the transaction that marks the inbox row
/// COMPLETED: whatever it writes through [`HandlerContext::conn`] and emits through
/// [`HandlerContext::emit`] commits with that mark, or not at all.
#[async_trait]
pub trait EventHandler<S: Store, T: Payload>: Send + Sync + 'static {
    /// Handles one event. An error rolls the transaction back and schedules a retry
    /// (or FAILED at once for [`HandlerError::permanent`]).
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<T>,
    ) -> Result<(), HandlerError>;
}

/// Executes commands of type `T`, with the same transaction rules as [`EventHandler`].
#[async_trait]
pub trait CommandHandler<S: Store, T: Payload>: Send + Sync + 'static {
    /// Handles one command.
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        command: Command<T>,
    ) -> Result<(), HandlerError>;
}

/// What a handler can reach: the transaction, the message's metadata, and emission of new
/// messages that commit with the handling.
pub struct HandlerContext<'t, S: Store> {
    tx: &'t mut S::Tx,
    message: &'t StoredMessage,
    emitted: Vec<MessageRecord>,
}

impl<'t, S: Store> HandlerContext<'t, S> {
    pub(crate) fn new(tx: &'t mut S::Tx, message: &'t StoredMessage) -> Self {
        HandlerContext {
            tx,
            message,
            emitted: Vec::new(),
        }
    }

    /// The connection of the handler's transaction: write your tables through it.
    pub fn conn(&mut self) -> &mut S::Conn {
        self.tx
    }

    /// The handler's transaction itself.
    pub fn tx(&mut self) -> &mut S::Tx {
        self.tx
    }

    /// The id of the message being handled.
    pub fn message_id(&self) -> MessageId {
        self.message.record.id
    }

    /// The tenant of the message being handled.
    pub fn tenant(&self) -> &TenantId {
        self.message.record.inbox_tenant()
    }

    /// The subscriber name this handler was registered under.
    pub fn subscriber(&self) -> &str {
        self.message.subscriber.as_deref().unwrap_or_default()
    }

    /// Failed attempts before this one.
    pub fn retry_count(&self) -> u32 {
        self.message.retry_count
    }

    /// How many times the transport delivered this message to the inbox.
    pub fn delivery_count(&self) -> u32 {
        self.message.delivery_count
    }

    fn inherit(&self, correlation: &mut Option<String>, causation: &mut Option<MessageId>) {
        if correlation.is_none() {
            correlation.clone_from(&self.message.record.headers.correlation_id);
        }
        if causation.is_none() {
            *causation = Some(self.message.record.id);
        }
    }

    /// Emits an event that commits with this handling. It inherits the handled message's
    /// correlation id and tenant, and its causation id is the handled message's id.
    pub fn emit<T: Payload>(&mut self, mut event: Event<T>) -> Result<()> {
        self.inherit(&mut event.correlation_id, &mut event.causation_id);
        event.tenant_id = self.tenant().clone();
        let record = MessageRecord::from_event(&event)?;
        record.check_size(DEFAULT_MAX_PAYLOAD_BYTES)?;
        self.emitted.push(record);
        Ok(())
    }

    /// Sends a command that commits with this handling (same inheritance as [`Self::emit`]).
    pub fn send<T: Payload>(&mut self, mut command: Command<T>) -> Result<()> {
        self.inherit(&mut command.correlation_id, &mut command.causation_id);
        let record = MessageRecord::from_command(&command)?;
        record.check_size(DEFAULT_MAX_PAYLOAD_BYTES)?;
        self.emitted.push(record);
        Ok(())
    }

    pub(crate) fn take_emitted(&mut self) -> Vec<MessageRecord> {
        std::mem::take(&mut self.emitted)
    }
}

/// A handler with its payload type erased, so handlers of every type fit one registry.
#[async_trait]
pub(crate) trait ErasedHandler<S: Store>: Send + Sync {
    async fn call(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        message: &StoredMessage,
    ) -> Result<(), HandlerError>;
}

pub(crate) struct EventAdapter<H, T>(pub(crate) H, pub(crate) PhantomData<fn() -> T>);
pub(crate) struct CommandAdapter<H, T>(pub(crate) H, pub(crate) PhantomData<fn() -> T>);

#[async_trait]
impl<S: Store, T: Payload, H: EventHandler<S, T>> ErasedHandler<S> for EventAdapter<H, T> {
    async fn call(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        message: &StoredMessage,
    ) -> Result<(), HandlerError> {
        let event = message.to_event::<T>().map_err(HandlerError::permanent)?;
        self.0.handle(ctx, event).await
    }
}

#[async_trait]
impl<S: Store, T: Payload, H: CommandHandler<S, T>> ErasedHandler<S> for CommandAdapter<H, T> {
    async fn call(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        message: &StoredMessage,
    ) -> Result<(), HandlerError> {
        let command = message.to_command::<T>().map_err(HandlerError::permanent)?;
        self.0.handle(ctx, command).await
    }
}
