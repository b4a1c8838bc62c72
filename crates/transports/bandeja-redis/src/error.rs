//! The errors of this crate. Each reaches the core as the `source` of a
//! [`TransportError`] whose kind tells the dispatcher what to do: a server that is down,
//! slow or out of memory is [`Unavailable`](bandeja_core::transport::TransportErrorKind::Unavailable)
//! (retried later without spending retries); options, a server too old, a key that holds
//! something else than a stream, or a message this transport can never carry are
//! [`Rejected`](bandeja_core::transport::TransportErrorKind::Rejected): they spend a retry
//! each and end FAILED with the reason.

use std::sync::Arc;
use std::time::Duration;

use bandeja_core::transport::TransportError;

/// The Redis client's error.
type ClientError = redis::RedisError;

/// What went wrong talking to Redis.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RedisError {
    /// The options are not usable (the message names the option).
    #[error("invalid Redis options: {0}")]
    InvalidOptions(String),
    /// The server refused or dropped the connection attempt.
    #[error("cannot connect to Redis at {url}: {source} (is the server running?)")]
    Connect {
        /// The server's URL, without its password.
        url: String,
        /// The client's error.
        #[source]
        source: ClientError,
    },
    /// The server did not accept the connection in time.
    #[error("cannot connect to Redis at {url}: no answer within {after:?}")]
    ConnectTimeout {
        /// The server's URL, without its password.
        url: String,
        /// How long it waited.
        after: Duration,
    },
    /// A reconnection attempt failed recently; the next one waits for the backoff.
    #[error("Redis is unreachable (next reconnection attempt in {retry_in:?}): {last}")]
    Reconnecting {
        /// How long until the next attempt.
        retry_in: Duration,
        /// Why the last attempt failed.
        #[source]
        last: Arc<RedisError>,
    },
    /// A command failed (the connection broke, or the server answered with an error).
    #[error("Redis {operation} failed: {source}")]
    Command {
        /// What was being done (`XADD bandeja.events.p3`…).
        operation: String,
        /// The client's error.
        #[source]
        source: ClientError,
    },
    /// A command got no answer in time (the server hangs, or the network does).
    #[error("Redis {operation}: no answer within {after:?}")]
    Timeout {
        /// What was being done.
        operation: String,
        /// How long it waited.
        after: Duration,
    },
    /// The server answered with something this transport does not expect.
    #[error("Redis {operation}: unexpected reply ({detail})")]
    Reply {
        /// What was being done.
        operation: String,
        /// What was wrong with the reply.
        detail: String,
    },
    /// A key of this prefix holds another type of value than a stream.
    #[error("the Redis key `{key}` holds another type of value than a stream: another application uses the prefix of this system — choose another `prefix`, or delete that key")]
    WrongType {
        /// The key.
        key: String,
    },
    /// The server lacks commands this transport needs (`XAUTOCLAIM` came with Redis 6.2).
    #[error("the Redis server at {url} is version {version}: bandeja-redis needs 6.2 or later (for XAUTOCLAIM) — upgrade the server")]
    ServerTooOld {
        /// The server's URL, without its password.
        url: String,
        /// The version it reports.
        version: String,
    },
    /// A message's partition is not one of this transport's.
    #[error("partition {partition} is not below this transport's {partitions} partitions")]
    Partition {
        /// The message's partition.
        partition: u16,
        /// The transport's partition count.
        partitions: u16,
    },
    /// The system's partition count, recorded on the server by the first process of this
    /// prefix, differs from this process's.
    #[error("this process is configured with {configured} partitions, but the services on prefix `{prefix}` use {declared} (recorded in the Redis key `{marker}`): set `partitions` to {declared} — every publisher and consumer of one system must agree; to change the count, stop every service, drain the streams and delete that key first")]
    PartitionMismatch {
        /// The prefix.
        prefix: String,
        /// This process's partition count.
        configured: u16,
        /// The count the server has.
        declared: String,
        /// The key that records it.
        marker: String,
    },
}

impl RedisError {
    /// A command's failure; a key holding another type becomes [`RedisError::WrongType`].
    pub(crate) fn command(operation: impl Into<String>, key: &str, source: ClientError) -> Self {
        if source.code() == Some("WRONGTYPE") {
            return RedisError::WrongType {
                key: key.to_owned(),
            };
        }
        RedisError::Command {
            operation: operation.into(),
            source,
        }
    }

    /// An unexpected reply.
    pub(crate) fn reply(operation: impl Into<String>, detail: impl Into<String>) -> Self {
        RedisError::Reply {
            operation: operation.into(),
            detail: detail.into(),
        }
    }

    /// Whether retrying later can help (the server may come back or be reconfigured).
    pub fn is_transient(&self) -> bool {
        !matches!(
            self,
            RedisError::InvalidOptions(_)
                | RedisError::WrongType { .. }
                | RedisError::ServerTooOld { .. }
                | RedisError::Partition { .. }
                | RedisError::PartitionMismatch { .. }
        )
    }

    /// Whether the connection the command went over should be replaced: it broke, or a
    /// command got no answer (its reply could still come, out of step with the next ones).
    pub(crate) fn breaks_connection(&self) -> bool {
        match self {
            RedisError::Command { source, .. } => {
                source.is_io_error()
                    || source.is_connection_dropped()
                    || source.is_unrecoverable_error()
            }
            RedisError::Timeout { .. } | RedisError::Reply { .. } => true,
            _ => false,
        }
    }

    /// Whether the server said the consumer group (or its stream) does not exist, or
    /// ended a blocking read because its stream was deleted.
    pub(crate) fn is_no_group(&self) -> bool {
        matches!(
            self,
            RedisError::Command { source, .. }
                if matches!(source.code(), Some("NOGROUP" | "UNBLOCKED"))
        )
    }
}

impl From<RedisError> for TransportError {
    fn from(error: RedisError) -> Self {
        if error.is_transient() {
            TransportError::unavailable(error)
        } else {
            TransportError::rejected(error)
        }
    }
}
