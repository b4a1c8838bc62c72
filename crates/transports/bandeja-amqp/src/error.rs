//! The errors of this crate. Each reaches the core as the `source` of a
//! [`TransportError`] whose kind tells the dispatcher what to do: a broker that is down or
//! does not confirm a message is [`Unavailable`](bandeja_core::transport::TransportErrorKind::Unavailable)
//! (retried later without spending retries); options or a message this transport can never
//! carry, and a command no queue takes (returned unroutable), are
//! [`Rejected`](bandeja_core::transport::TransportErrorKind::Rejected): they spend a retry
//! each and end FAILED with the reason.

use std::sync::Arc;
use std::time::Duration;

use bandeja_core::transport::TransportError;

/// What went wrong talking to RabbitMQ.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AmqpError {
    /// The options are not usable (the message names the option).
    #[error("invalid AMQP options: {0}")]
    InvalidOptions(String),
    /// The broker refused or dropped the connection attempt.
    #[error("cannot connect to RabbitMQ at {url}: {source} (is the broker running?)")]
    Connect {
        /// The broker URI, without its password.
        url: String,
        /// The client's error.
        #[source]
        source: lapin::Error,
    },
    /// A consumer's channel stopped being connected while it waited for deliveries.
    #[error("the channel consuming `{queue}` is no longer connected: consuming again")]
    ChannelLost {
        /// The queue.
        queue: String,
    },
    /// The broker did not accept the connection in time.
    #[error("cannot connect to RabbitMQ at {url}: no answer within {after:?}")]
    ConnectTimeout {
        /// The broker URI, without its password.
        url: String,
        /// How long it waited.
        after: Duration,
    },
    /// A reconnection attempt failed recently; the next one waits for the backoff.
    #[error("RabbitMQ is unreachable (next reconnection attempt in {retry_in:?}): {last}")]
    Reconnecting {
        /// How long until the next attempt.
        retry_in: Duration,
        /// Why the last attempt failed.
        #[source]
        last: Arc<AmqpError>,
    },
    /// An operation on a channel failed (a declaration, a publish, a consume, an ack).
    #[error("RabbitMQ {operation} failed: {source}")]
    Channel {
        /// What was being done (`declare exchange bandeja.events`…).
        operation: String,
        /// The client's error.
        #[source]
        source: lapin::Error,
    },
    /// A name does not fit in an AMQP short string.
    #[error("the {what} `{name}` is {len} bytes long: AMQP allows at most 255")]
    NameTooLong {
        /// Which name (routing key, queue).
        what: &'static str,
        /// The name, cut to its first 64 characters.
        name: String,
        /// Its length in bytes.
        len: usize,
    },
    /// A message's partition is not one of this transport's.
    #[error("partition {partition} is not below this transport's {partitions} partitions")]
    Partition {
        /// The message's partition.
        partition: u16,
        /// The transport's partition count.
        partitions: u16,
    },
    /// The system's partition count, recorded on the broker by the first service of this
    /// prefix, differs from this process's.
    #[error("this process is configured with {configured} partitions, but the services on prefix `{prefix}` use {declared} (recorded on the broker as the `x-max-length` of queue `{marker}`): set `partitions` to {declared} — every publisher and consumer of one system must agree; to change the count, stop every service and delete that queue first")]
    PartitionMismatch {
        /// The prefix.
        prefix: String,
        /// This process's partition count.
        configured: u16,
        /// The count the broker has.
        declared: String,
        /// The queue that records it.
        marker: String,
    },
    /// The broker negatively acknowledged a message (it could not store it).
    #[error("RabbitMQ did not take the message (nack) on exchange `{exchange}`")]
    Nacked {
        /// The exchange it was published to.
        exchange: String,
    },
    /// The broker did not confirm a message (the channel is not in confirm mode).
    #[error("RabbitMQ did not confirm the message: the channel is not in confirm mode")]
    NotConfirmed,
    /// The broker cancelled a consumer (its queue was deleted, for instance).
    #[error("RabbitMQ cancelled the consumer of queue `{queue}`")]
    ConsumerCancelled {
        /// The queue.
        queue: String,
    },
    /// A batch was stored but its channel closed before the acknowledgement went out
    /// (RabbitMQ redelivers it; the inbox absorbs the copies).
    #[error("the channel of queue `{queue}` closed before the acknowledgement")]
    NotAcknowledged {
        /// The queue.
        queue: String,
    },
    /// The subscription was stopped (it does not reconnect any more).
    #[error("the AMQP subscription is stopped")]
    Stopped,
    /// A mandatory message (a command) that no queue is bound for came back. Counts as a
    /// failed attempt: retried with backoff, FAILED after `max-retries`.
    #[error("no queue is bound to `{routing_key}` on exchange `{exchange}` ({reply}): no service consumes this topic — start the service whose `commands.topics` entry names it (with the same prefix and partition count), then retry the FAILED message")]
    Unroutable {
        /// The exchange.
        exchange: String,
        /// The routing key nobody is bound to.
        routing_key: String,
        /// The broker's reply text (`NO_ROUTE`).
        reply: String,
    },
}

impl AmqpError {
    /// A channel operation's failure.
    pub(crate) fn channel(operation: impl Into<String>, source: lapin::Error) -> Self {
        AmqpError::Channel {
            operation: operation.into(),
            source,
        }
    }

    /// A name too long for AMQP.
    pub(crate) fn too_long(what: &'static str, name: &str) -> Self {
        AmqpError::NameTooLong {
            what,
            name: name.chars().take(64).collect(),
            len: name.len(),
        }
    }

    /// Whether retrying later can help (the broker may come back or be reconfigured).
    pub fn is_transient(&self) -> bool {
        !matches!(
            self,
            AmqpError::InvalidOptions(_)
                | AmqpError::NameTooLong { .. }
                | AmqpError::Partition { .. }
                | AmqpError::Unroutable { .. }
                | AmqpError::PartitionMismatch { .. }
        )
    }
}

impl From<AmqpError> for TransportError {
    fn from(error: AmqpError) -> Self {
        if error.is_transient() {
            TransportError::unavailable(error)
        } else {
            TransportError::rejected(error)
        }
    }
}
