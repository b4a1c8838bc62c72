//! The publishing side: one connection with one channel in confirm mode, shared by every
//! caller (publishes are serialized, so one caller's messages leave in order), rebuilt on
//! the next publish after it broke.
//!
//! Confirms are awaited until the publish deadline the dispatcher passes (inside the rows'
//! lease); a message not confirmed by then is unavailable (published again later; the
//! inbox absorbs a copy). A command that no queue takes comes back (`mandatory`): that is
//! a refusal, so it spends a retry and ends FAILED with the reason after `max-retries`.

use std::sync::Arc;

use bandeja_core::record::{MessageKind, MessageRecord};
use bandeja_core::transport::{wire, Instant, Outgoing, TransportError};
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Confirmation, Connection, PublisherConfirm};

use crate::connection::{close, Retry, Settings};
use crate::error::AmqpError;
use crate::names;

/// AMQP `delivery_mode` of a message written to disk.
const PERSISTENT: u8 = 2;

/// The header carrying the W3C trace context.
const TRACEPARENT_HEADER: &str = "traceparent";

/// The header naming the emitting service.
const SOURCE_SERVICE_HEADER: &str = "bandeja-source-service";

/// The publishing connection, reconnected on demand.
#[derive(Debug)]
pub(crate) struct Publisher {
    settings: Arc<Settings>,
    state: tokio::sync::Mutex<State>,
}

#[derive(Debug)]
struct State {
    session: Option<Session>,
    retry: Retry,
}

/// A connection, its confirm-mode channel and the declared exchanges.
#[derive(Debug)]
struct Session {
    connection: Connection,
    channel: Channel,
    events: ShortString,
    commands: ShortString,
}

/// What a publish call needs of the session, taken out of the lock: publish calls share
/// the channel (lapin orders their frames) and wait for their confirms concurrently.
#[derive(Debug, Clone)]
struct Lane {
    channel: Channel,
    events: ShortString,
    commands: ShortString,
}

impl Session {
    /// Connects, declares both exchanges and puts the channel in confirm mode.
    async fn open(settings: &Settings) -> Result<Session, AmqpError> {
        let connection = settings.connect("publisher").await?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| AmqpError::channel("open a channel", e))?;
        let events = settings
            .declare_exchange(&channel, MessageKind::Event)
            .await?;
        let commands = settings
            .declare_exchange(&channel, MessageKind::Command)
            .await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(|e| AmqpError::channel("enable publisher confirms", e))?;
        Ok(Session {
            connection,
            channel,
            events,
            commands,
        })
    }

    fn usable(&self) -> bool {
        self.connection.status().connected() && self.channel.status().connected()
    }
}

impl State {
    /// The current session, or a new one (unless the backoff after a failed attempt runs).
    async fn session(&mut self, settings: &Settings) -> Result<&Session, AmqpError> {
        let current = match self.session.take() {
            Some(session) if session.usable() => session,
            stale => {
                if let Some(stale) = stale {
                    tracing::warn!("the AMQP publishing connection broke: reconnecting");
                    close(stale.connection).await;
                }
                self.retry.check()?;
                match Session::open(settings).await {
                    Ok(session) => {
                        self.retry.succeeded();
                        tracing::info!("AMQP publishing connection open");
                        session
                    }
                    Err(error) => {
                        self.retry.failed(&error);
                        return Err(error);
                    }
                }
            }
        };
        Ok(self.session.insert(current))
    }
}

impl Publisher {
    /// Connects (failing at once if the broker is unreachable) and declares the exchanges.
    pub(crate) async fn connect(settings: Arc<Settings>) -> Result<Publisher, AmqpError> {
        let session = Session::open(&settings).await?;
        settings.check_partitions(&session.connection).await?;
        let retry = Retry::new(settings.options.reconnect_max_backoff);
        Ok(Publisher {
            settings,
            state: tokio::sync::Mutex::new(State {
                session: Some(session),
                retry,
            }),
        })
    }

    /// Publishes every message, then awaits every confirmation until `deadline`: one
    /// result per message.
    pub(crate) async fn publish(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> Vec<Result<(), TransportError>> {
        let late = || {
            messages
                .iter()
                .map(|_| Err(TransportError::deadline()))
                .collect()
        };
        if messages.is_empty() {
            return Vec::new();
        }
        if Instant::now() >= deadline {
            return late();
        }
        let lane = async {
            let mut state = self.state.lock().await;
            state.session(&self.settings).await.map(|session| Lane {
                channel: session.channel.clone(),
                events: session.events.clone(),
                commands: session.commands.clone(),
            })
        };
        let lane = match tokio::time::timeout_at(deadline, lane).await {
            Ok(Ok(lane)) => lane,
            Ok(Err(error)) => {
                tracing::debug!(%error, "AMQP publish: broker unavailable");
                return messages.iter().map(|_| Err(error.clone().into())).collect();
            }
            Err(_) => return late(),
        };
        let (results, broken) = send(
            &lane,
            self.settings.options.partitions,
            kind,
            messages,
            deadline,
        )
        .await;
        if let Some(error) = broken {
            tracing::warn!(%error, "AMQP publishing channel failed: the next publish reconnects");
            let mut state = self.state.lock().await;
            // Only a broken session: another call may have reconnected already.
            let broken = state
                .session
                .as_ref()
                .is_some_and(|session| !session.usable());
            if broken {
                if let Some(session) = state.session.take() {
                    close(session.connection).await;
                }
            }
        }
        results
    }
}

/// One publish call on a session: the results, and the error that broke the channel.
async fn send(
    session: &Lane,
    partitions: u16,
    kind: MessageKind,
    messages: &[Outgoing<'_>],
    deadline: Instant,
) -> (Vec<Result<(), TransportError>>, Option<AmqpError>) {
    let exchange = match kind {
        MessageKind::Event => &session.events,
        MessageKind::Command => &session.commands,
    };
    // A command nobody consumes yet comes back; an event nobody subscribes to is dropped.
    let options = BasicPublishOptions {
        mandatory: kind == MessageKind::Command,
        immediate: false,
    };
    let mut results: Vec<Option<Result<(), TransportError>>> =
        messages.iter().map(|_| None).collect();
    let mut confirms: Vec<(usize, ShortString, PublisherConfirm)> = Vec::new();
    let mut broken: Option<AmqpError> = None;
    // Every publish is started at once (lapin queues the frames in call order) rather than
    // one after the other's hand-over to the I/O loop: a batch costs one pass, not one
    // wake-up per message.
    let mut keyed = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        match routing_key(message, partitions) {
            Ok(key) => keyed.push((index, message, key)),
            Err(error) => {
                tracing::warn!(message_id = %message.record.id, %error, "not published");
                results[index] = Some(Err(error.into()));
            }
        }
    }
    let publishing = futures::future::join_all(keyed.iter().map(|(_, message, key)| {
        session.channel.basic_publish(
            exchange.clone(),
            key.clone(),
            options,
            &message.body,
            properties(message.record, wire::content_type(&message.body)),
        )
    }));
    let Ok(published) = tokio::time::timeout_at(deadline, publishing).await else {
        // Not even handed to the connection in time: none of them counts.
        for (index, _, _) in keyed {
            results[index] = Some(Err(TransportError::deadline()));
        }
        return (finish(results), broken);
    };
    for ((index, _, key), published) in keyed.into_iter().zip(published) {
        match published {
            Ok(confirm) => confirms.push((index, key, confirm)),
            Err(error) => {
                let error = AmqpError::channel(format!("publish to `{exchange}`"), error);
                results[index] = Some(Err(error.clone().into()));
                broken.get_or_insert(error);
            }
        }
    }
    for (index, key, confirm) in confirms {
        let Ok(confirmed) = tokio::time::timeout_at(deadline, confirm).await else {
            results[index] = Some(Err(TransportError::deadline()));
            continue;
        };
        let result = match confirmed {
            Ok(Confirmation::Ack(None)) => Ok(()),
            Ok(Confirmation::Ack(Some(returned))) => Err(AmqpError::Unroutable {
                exchange: exchange.to_string(),
                routing_key: key.to_string(),
                reply: returned.reply_text.to_string(),
            }),
            Ok(Confirmation::Nack(_)) => Err(AmqpError::Nacked {
                exchange: exchange.to_string(),
            }),
            Ok(Confirmation::NotRequested) => Err(AmqpError::NotConfirmed),
            Err(error) => {
                let error = AmqpError::channel(format!("confirm on `{exchange}`"), error);
                broken.get_or_insert_with(|| error.clone());
                Err(error)
            }
        };
        results[index] = Some(result.map_err(TransportError::from));
    }
    (finish(results), broken)
}

/// One result per message (a message without one was not confirmed).
fn finish(results: Vec<Option<Result<(), TransportError>>>) -> Vec<Result<(), TransportError>> {
    results
        .into_iter()
        .map(|result| result.unwrap_or_else(|| Err(AmqpError::NotConfirmed.into())))
        .collect()
}

/// The routing key of a message, checked.
fn routing_key(message: &Outgoing<'_>, partitions: u16) -> Result<ShortString, AmqpError> {
    if message.partition >= partitions {
        return Err(AmqpError::Partition {
            partition: message.partition,
            partitions,
        });
    }
    names::routing_key(message.partition, message.address)
}

/// The AMQP properties of a message: id, persistence, the body's content type (a
/// structured-mode CloudEvent's), type, correlation id and the `traceparent` and source
/// service headers. (A value too long for an AMQP short string is left out: the body
/// carries every field anyway.)
fn properties(record: &MessageRecord, content_type: &str) -> BasicProperties {
    let mut properties = BasicProperties::default()
        .with_delivery_mode(PERSISTENT)
        .with_content_type(content_type.into());
    if let Ok(id) = ShortString::try_new(record.id.to_string()) {
        properties = properties.with_message_id(id);
    }
    if let Ok(message_type) = ShortString::try_new(record.message_type.as_str()) {
        properties = properties.with_type(message_type);
    }
    if let Some(correlation_id) = &record.headers.correlation_id {
        if let Ok(correlation_id) = ShortString::try_new(correlation_id.as_str()) {
            properties = properties.with_correlation_id(correlation_id);
        }
    }
    let mut headers = FieldTable::default();
    if let Some(traceparent) = &record.headers.traceparent {
        headers.insert(
            TRACEPARENT_HEADER.into(),
            AMQPValue::LongString(traceparent.as_str().into()),
        );
    }
    if let Some(service) = &record.headers.source_service {
        headers.insert(
            SOURCE_SERVICE_HEADER.into(),
            AMQPValue::LongString(service.as_str().into()),
        );
    }
    if !headers.inner().is_empty() {
        properties = properties.with_headers(headers);
    }
    properties
}
