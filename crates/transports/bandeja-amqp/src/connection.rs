//! Connecting (with a timeout), declaring the topology, and the backoff between
//! reconnection attempts.

use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) use bandeja_core::transport::backoff::Backoff;

use bandeja_core::record::MessageKind;
use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::uri::AMQPUri;
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};

use crate::error::AmqpError;
use crate::names;
use crate::options::{redacted, AmqpOptions};

/// The validated options with the parsed URI, shared by the publisher and subscriptions.
pub(crate) struct Settings {
    pub(crate) options: AmqpOptions,
    pub(crate) uri: AMQPUri,
}

impl std::fmt::Debug for Settings {
    // The URI holds the password: show the options, whose `Debug` leaves it out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.options.fmt(f)
    }
}

/// How long a graceful close may take before the connection is simply dropped.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

impl Settings {
    /// Opens a connection named `name` (shown in the management UI), within the connect
    /// timeout.
    pub(crate) async fn connect(&self, name: &str) -> Result<Connection, AmqpError> {
        let url = redacted(&self.uri);
        let properties = ConnectionProperties::default()
            .with_connection_name(format!("bandeja {} {name}", self.options.prefix).into());
        let connecting = Connection::connect_uri(self.uri.clone(), properties);
        match tokio::time::timeout(self.options.connect_timeout, connecting).await {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(source)) => Err(AmqpError::Connect { url, source }),
            Err(_) => Err(AmqpError::ConnectTimeout {
                url,
                after: self.options.connect_timeout,
            }),
        }
    }

    /// Declares the exchange of `kind` (direct, durable; idempotent).
    pub(crate) async fn declare_exchange(
        &self,
        channel: &Channel,
        kind: MessageKind,
    ) -> Result<ShortString, AmqpError> {
        let name = names::exchange(&self.options.prefix, kind);
        let exchange = names::short("exchange name", name.clone())?;
        let options = ExchangeDeclareOptions {
            durable: true,
            auto_delete: self.options.auto_delete_exchanges,
            ..ExchangeDeclareOptions::default()
        };
        channel
            .exchange_declare(
                exchange.clone(),
                ExchangeKind::Direct,
                options,
                FieldTable::default(),
            )
            .await
            .map_err(|e| AmqpError::channel(format!("declare exchange `{name}`"), e))?;
        Ok(exchange)
    }

    /// Declares a partition queue (durable, single active consumer) and binds it to the
    /// exchange of `kind` with `p<N>.<address>` for each address.
    pub(crate) async fn declare_queue(
        &self,
        channel: &Channel,
        kind: MessageKind,
        queue: &ShortString,
        partition: u16,
        addresses: &[String],
    ) -> Result<(), AmqpError> {
        let exchange = self.declare_exchange(channel, kind).await?;
        let mut arguments = FieldTable::default();
        arguments.insert("x-single-active-consumer".into(), AMQPValue::Boolean(true));
        if let Some(expires) = self.options.queue_expires {
            // Validated: at least 1 ms and within 64 bits.
            let millis = i64::try_from(expires.as_millis()).unwrap_or(i64::MAX);
            arguments.insert("x-expires".into(), AMQPValue::LongLongInt(millis));
        }
        let options = QueueDeclareOptions {
            durable: true,
            ..QueueDeclareOptions::default()
        };
        channel
            .queue_declare(queue.clone(), options, arguments)
            .await
            .map_err(|e| AmqpError::channel(format!("declare queue `{queue}`"), e))?;
        for address in addresses {
            let key = names::routing_key(partition, address)?;
            channel
                .queue_bind(
                    queue.clone(),
                    exchange.clone(),
                    key.clone(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map_err(|e| AmqpError::channel(format!("bind queue `{queue}` with `{key}`"), e))?;
        }
        Ok(())
    }
}

impl Settings {
    /// Checks that every service of this prefix uses this process's partition count: the
    /// first one records it as the `x-max-length` of the durable, never-bound queue
    /// `<prefix>.partitions` (RabbitMQ refuses a redeclaration with another value, which
    /// is atomic across processes); a process with another count is refused here, at start.
    pub(crate) async fn check_partitions(&self, connection: &Connection) -> Result<(), AmqpError> {
        let prefix = &self.options.prefix;
        let marker = names::partitions_marker(prefix)?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| AmqpError::channel("open a channel", e))?;
        let mut arguments = FieldTable::default();
        arguments.insert(
            "x-max-length".into(),
            AMQPValue::LongLongInt(i64::from(self.options.partitions)),
        );
        if let Some(expires) = self.options.queue_expires {
            let millis = i64::try_from(expires.as_millis()).unwrap_or(i64::MAX);
            arguments.insert("x-expires".into(), AMQPValue::LongLongInt(millis));
        }
        let options = QueueDeclareOptions {
            durable: true,
            ..QueueDeclareOptions::default()
        };
        let declared = channel
            .queue_declare(marker.clone(), options, arguments)
            .await;
        match declared {
            Ok(_) => {
                if let Err(error) = channel.close(200, "bandeja: checked".into()).await {
                    tracing::debug!(%error, "closing the partition-check channel");
                }
                Ok(())
            }
            Err(error) => {
                let text = error.to_string();
                match declared_count(&text) {
                    Some(declared) => Err(AmqpError::PartitionMismatch {
                        prefix: prefix.clone(),
                        configured: self.options.partitions,
                        declared,
                        marker: marker.to_string(),
                    }),
                    None => Err(AmqpError::channel(
                        format!("declare queue `{marker}`"),
                        error,
                    )),
                }
            }
        }
    }
}

/// The count in RabbitMQ's refusal of a queue redeclared with another `x-max-length`
/// ("inequivalent arg 'x-max-length' … but current is the value '8' of type 'long'").
fn declared_count(refusal: &str) -> Option<String> {
    let rest = refusal.split("inequivalent arg 'x-max-length'").nth(1)?;
    let current = rest.split("current is").nth(1)?;
    let value = current.split('\'').nth(1)?;
    let value = value.trim_start_matches("the value ").trim();
    (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit())).then(|| value.to_owned())
}

/// Closes a connection gracefully, or gives up (dropping it) after a short while.
pub(crate) async fn close(connection: Connection) {
    if connection.status().connected() {
        let closing = connection.close(200, "bandeja: closing".into());
        if let Ok(Err(error)) = tokio::time::timeout(CLOSE_TIMEOUT, closing).await {
            tracing::debug!(%error, "closing an AMQP connection");
        }
    }
}

/// A connection shared by the partition tasks of one subscription: the first task that
/// finds it broken reconnects; [`Link::close`] closes it for good.
#[derive(Debug)]
pub(crate) struct Link {
    settings: Arc<Settings>,
    name: String,
    current: tokio::sync::Mutex<LinkState>,
}

#[derive(Debug, Default)]
struct LinkState {
    connection: Option<Connection>,
    closed: bool,
}

impl Link {
    /// A link that connects on first use.
    pub(crate) fn new(settings: Arc<Settings>, name: String) -> Self {
        Link {
            settings,
            name,
            current: tokio::sync::Mutex::new(LinkState::default()),
        }
    }

    /// A new channel, on the current connection or a new one if it is broken.
    pub(crate) async fn channel(&self) -> Result<Channel, AmqpError> {
        let mut state = self.current.lock().await;
        if state.closed {
            return Err(AmqpError::Stopped);
        }
        if let Some(connection) = state.connection.as_ref() {
            if connection.status().connected() {
                match connection.create_channel().await {
                    Ok(channel) => return Ok(channel),
                    Err(error) => tracing::debug!(%error, "reconnecting: no channel"),
                }
            }
        }
        if let Some(old) = state.connection.take() {
            close(old).await;
        }
        let connection = self.settings.connect(&self.name).await?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| AmqpError::channel("open a channel", e))?;
        state.connection = Some(connection);
        Ok(channel)
    }

    /// Closes the connection (its channels with it: RabbitMQ requeues what they had not
    /// acknowledged) and refuses to reconnect.
    pub(crate) async fn close(&self) {
        let mut state = self.current.lock().await;
        state.closed = true;
        if let Some(connection) = state.connection.take() {
            close(connection).await;
        }
    }
}

/// When the next reconnection attempt may start, after failures.
#[derive(Debug)]
pub(crate) struct Retry {
    backoff: Backoff,
    not_before: Option<(Instant, Arc<AmqpError>)>,
}

impl Retry {
    /// No failure yet.
    pub(crate) fn new(max: Duration) -> Self {
        Retry {
            backoff: Backoff::new(max),
            not_before: None,
        }
    }

    /// `Err` while the backoff after the last failure runs.
    pub(crate) fn check(&self) -> Result<(), AmqpError> {
        match &self.not_before {
            Some((at, last)) => {
                let now = Instant::now();
                if now < *at {
                    Err(AmqpError::Reconnecting {
                        retry_in: *at - now,
                        last: last.clone(),
                    })
                } else {
                    Ok(())
                }
            }
            None => Ok(()),
        }
    }

    /// An attempt failed: the next waits longer.
    pub(crate) fn failed(&mut self, error: &AmqpError) {
        let pause = self.backoff.next();
        self.not_before = Some((Instant::now() + pause, Arc::new(error.clone())));
    }

    /// An attempt succeeded.
    pub(crate) fn succeeded(&mut self) {
        self.backoff.reset();
        self.not_before = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_count_is_read_from_the_refusal() {
        let refusal = "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'b.partitions' in vhost '/': received the value '4' of type 'long' but current is the value '8' of type 'long'";
        assert_eq!(declared_count(refusal).as_deref(), Some("8"));
        let older = "inequivalent arg 'x-max-length' for queue 'q' in vhost '/': received '4' but current is '16'";
        assert_eq!(declared_count(older).as_deref(), Some("16"));
        assert_eq!(
            declared_count("inequivalent arg 'x-expires' for queue 'q'"),
            None
        );
        assert_eq!(declared_count("connection reset"), None);
    }
}
