//! The handler traits users implement, and the context a handler runs in: the transaction
//! that will mark its inbox row COMPLETED.

use std::future::Future;
use std::marker::PhantomData;

use async_trait::async_trait;

use crate::envelope::{Command, Event, MessageId, Payload};
use crate::error::{HandlerError, Result};
use crate::record::{MessageRecord, StoredMessage};
use crate::saga::{self, SagaError, SagaId, SagaReply, StepOutcome};
use crate::store::Store;
use crate::tenant::TenantId;
use crate::transport::routing::{check_outgoing, Routing};

/// Reacts to events of type `T`. Runs inside the transaction that marks the inbox row
/// COMPLETED: whatever it writes through [`HandlerContext::conn`] and emits through
/// [`HandlerContext::emit`] commits with that mark, or not at all.
///
/// Implement it with a plain `async fn` (no attribute macro); the future must be `Send`,
/// since workers run handlers on the Tokio runtime's threads:
///
/// ```
/// use bandeja_core::{Event, EventHandler, HandlerContext, HandlerError, Payload, Store};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct OrderPlaced { order_id: i64 }
/// impl Payload for OrderPlaced { const TYPE: &'static str = "shop.OrderPlaced"; }
///
/// struct Mailer;
/// impl<S: Store> EventHandler<S, OrderPlaced> for Mailer {
///     async fn handle(&self, ctx: &mut HandlerContext<'_, S>, event: Event<OrderPlaced>) -> Result<(), HandlerError> {
///         let _ = (ctx.message_id(), event.payload.order_id);
///         Ok(())
///     }
/// }
/// ```
///
/// With one store, its context alias names the store once:
/// `impl EventHandler<SqliteStore, OrderPlaced> for Mailer { async fn handle(&self, ctx: &mut
/// bandeja::sqlite::Context<'_>, event: Event<OrderPlaced>) … }`. A type may handle several
/// payload types (one impl each); registering it then names the payload:
/// `.on_event::<OrderPlaced, _>("mailer", Mailer)`.
pub trait EventHandler<S: Store, T: Payload>: Send + Sync + 'static {
    /// Handles one event. An error rolls the transaction back and schedules a retry
    /// (or FAILED at once for [`HandlerError::permanent`]).
    fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<T>,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send;
}

/// Executes commands of type `T`, with the same transaction rules as [`EventHandler`]
/// (implemented with a plain `async fn` too).
pub trait CommandHandler<S: Store, T: Payload>: Send + Sync + 'static {
    /// Handles one command.
    fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        command: Command<T>,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send;
}

/// Reacts to events of type `T` a batch at a time, so its own writes can be one statement
/// for many events (a multi-row INSERT) instead of one per event.
///
/// The batch runs inside one transaction (with the batched handler path) or alone in the
/// transaction of its single message; either way its writes commit with the COMPLETED
/// marks of exactly those events. If the batch fails, bandeja rolls it back and calls the
/// handler again with one event at a time, so a poison event fails alone. Write the
/// handler so that processing a batch equals processing its events one by one.
/// [`HandlerContext::message_id`] and [`HandlerContext::emit`] refer to the first event of
/// the batch: use [`HandlerContext::emit_caused_by`] to emit per event. Implemented with a
/// plain `async fn`, like [`EventHandler`].
pub trait EventBatchHandler<S: Store, T: Payload>: Send + Sync + 'static {
    /// Handles the events of one batch (same subscriber and tenant, in claim order).
    fn handle_batch(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        events: Vec<Event<T>>,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send;
}

/// What a handler can reach: the transaction, the message's metadata, and emission of new
/// messages that commit with the handling. Each store names its own as `Context`
/// (`bandeja::sqlite::Context<'_>` is `HandlerContext<'_, SqliteStore>`).
pub struct HandlerContext<'t, S: Store> {
    tx: &'t mut S::Tx,
    message: &'t StoredMessage,
    emitted: Vec<MessageRecord>,
    max_payload_bytes: usize,
    routing: Option<&'t Routing>,
}

impl<'t, S: Store> HandlerContext<'t, S> {
    /// The context of a handler of `message` on `tx`; what it emits follows the runtime's
    /// rules (`max_payload_bytes`, and with a broker `routing`).
    pub(crate) fn new(
        tx: &'t mut S::Tx,
        message: &'t StoredMessage,
        max_payload_bytes: usize,
        routing: Option<&'t Routing>,
    ) -> Self {
        HandlerContext {
            tx,
            message,
            emitted: Vec::new(),
            max_payload_bytes,
            routing,
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

    /// The handled message's correlation id, else (a row written before every message got
    /// one) its id: the flow it starts.
    fn inherit(&self, correlation: &mut Option<String>, causation: &mut Option<MessageId>) {
        if correlation.is_none() {
            let record = &self.message.record;
            *correlation = Some(
                record
                    .headers
                    .correlation_id
                    .clone()
                    .unwrap_or_else(|| record.id.to_string()),
            );
        }
        if causation.is_none() {
            *causation = Some(self.message.record.id);
        }
    }

    /// Emits an event that commits with this handling. It inherits the handled message's
    /// correlation id and tenant, and its causation id is the handled message's id. The
    /// runtime's rules apply, as for [`Bandeja::outbox`](crate::Bandeja::outbox): a payload
    /// over the limit, text with a NUL character or an id this handling already emitted is
    /// an error, and nothing is emitted.
    pub fn emit<T: Payload>(&mut self, mut event: Event<T>) -> Result<()> {
        self.inherit(&mut event.correlation_id, &mut event.causation_id);
        event.tenant_id = self.tenant().clone();
        let record = MessageRecord::from_event(&event)?;
        self.push(record)
    }

    /// Emits an event caused by `cause` (one event of a batch): correlation id inherited
    /// from it, causation id = its id, tenant = the handled tenant.
    pub fn emit_caused_by<C, T: Payload>(
        &mut self,
        cause: &Event<C>,
        mut event: Event<T>,
    ) -> Result<()> {
        if event.correlation_id.is_none() {
            event.correlation_id = Some(
                cause
                    .correlation_id
                    .clone()
                    .unwrap_or_else(|| cause.id.to_string()),
            );
        }
        event.causation_id.get_or_insert(cause.id);
        self.emit(event)
    }

    /// Sends a command that commits with this handling (same inheritance and rules as
    /// [`Self::emit`]; with a broker, a target service without a topic in `commands.topics`
    /// is an error).
    pub fn send<T: Payload>(&mut self, mut command: Command<T>) -> Result<()> {
        self.inherit(&mut command.correlation_id, &mut command.causation_id);
        let record = MessageRecord::from_command(&command)?;
        self.push(record)
    }

    /// Answers the saga whose step's command is being handled: the step was done (with
    /// data for the saga, e.g. a charge id) or refused (a business "no": out of stock).
    /// The reply commits with this handling, so the saga moves exactly once. A handler
    /// that cannot do the step right now should return an error instead (retried as
    /// usual); a step that never replies times out. An error, and nothing sent, if the
    /// message is not a saga's step.
    pub fn reply_to_saga(&mut self, outcome: StepOutcome) -> Result<()> {
        let record = &self.message.record;
        let extra = &record.headers.extra;
        let saga_id = extra
            .get(saga::headers::SAGA_ID)
            .and_then(|id| id.parse::<SagaId>().ok())
            .ok_or(SagaError::NotAStep)?;
        let reply_to = extra
            .get(saga::headers::REPLY_TO)
            .cloned()
            .ok_or(SagaError::NotAStep)?;
        let origin = record
            .source_tenant_id
            .clone()
            .unwrap_or_else(|| record.tenant_id.clone());
        let (ok, reason, data) = match outcome {
            StepOutcome::Done(data) => (true, None, data),
            StepOutcome::Refused(reason) => (false, Some(reason), serde_json::Value::Null),
        };
        let reply = SagaReply {
            saga_id,
            in_reply_to: record.id,
            ok,
            reason,
            data,
        };
        let command = crate::tenant::sync_scope(self.tenant().clone(), || {
            Command::to(origin, reply_to, reply)
        })?;
        self.send(command)
    }

    /// Keeps a built command (a saga's next step) for the outbox insert after the handler.
    pub(crate) fn send_record(&mut self, record: MessageRecord) -> Result<()> {
        self.push(record)
    }

    /// Keeps `record` for the outbox insert after the handler, once the emission rules
    /// (the same as [`Outbox`](crate::Outbox)'s) accept it.
    fn push(&mut self, record: MessageRecord) -> Result<()> {
        // Each kind is one insert, where an id may appear once.
        let emitted = &self.emitted;
        check_outgoing(&record, self.max_payload_bytes, self.routing, |r| {
            emitted.iter().any(|e| e.kind == r.kind && e.id == r.id)
        })?;
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

    /// Whether [`ErasedHandler::call_many`] handles a group in one call.
    fn batches(&self) -> bool {
        false
    }

    /// Handles several messages in one call (batch handlers only).
    async fn call_many(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        messages: &[&StoredMessage],
    ) -> Result<(), HandlerError> {
        for message in messages {
            self.call(ctx, message).await?;
        }
        Ok(())
    }
}

pub(crate) struct EventBatchAdapter<H, T>(pub(crate) H, pub(crate) PhantomData<fn() -> T>);

#[async_trait]
impl<S: Store, T: Payload, H: EventBatchHandler<S, T>> ErasedHandler<S>
    for EventBatchAdapter<H, T>
{
    async fn call(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        message: &StoredMessage,
    ) -> Result<(), HandlerError> {
        self.call_many(ctx, &[message]).await
    }

    fn batches(&self) -> bool {
        true
    }

    async fn call_many(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        messages: &[&StoredMessage],
    ) -> Result<(), HandlerError> {
        let events = messages
            .iter()
            .map(|m| m.to_event::<T>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(HandlerError::permanent)?;
        self.0.handle_batch(ctx, events).await
    }
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
