//! The errors of this crate, and how each becomes a
//! [`TransportError`](bandeja_core::transport::TransportError) of the right kind.
//!
//! A [`TransportError`] returned by this crate carries a [`NatsError`] as its source
//! (`error.get_ref().downcast_ref::<NatsError>()`), which keeps the client's own typed error.

use async_nats::jetstream::context::{CreateStreamError, CreateStreamErrorKind};
use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::stream::{ConsumerError, ConsumerErrorKind};
use async_nats::jetstream::ErrorCode;
use async_nats::{ConnectError, ConnectErrorKind};
use bandeja_core::transport::TransportError;

/// An option that the server would refuse or that makes no sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// No server address.
    #[error("`url` is empty: give the NATS server address, e.g. nats://127.0.0.1:4222")]
    EmptyUrl,
    /// The prefix cannot be one subject token.
    #[error("`prefix` {prefix:?} is not usable as a NATS subject token: use ASCII letters, digits, `-` and `_` only (e.g. {suggestion:?})")]
    Prefix {
        /// The prefix given.
        prefix: String,
        /// A usable one.
        suggestion: String,
    },
    /// Zero partitions.
    #[error("`partitions` must be at least 1")]
    NoPartitions,
    /// A duration of zero.
    #[error("`{field}` must be longer than zero")]
    Duration {
        /// The option.
        field: &'static str,
    },
}

/// What went wrong talking to NATS.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NatsError {
    /// Invalid [`NatsOptions`](crate::NatsOptions).
    #[error("invalid NATS transport options: {0}")]
    Options(#[from] OptionsError),
    /// The first connection failed.
    #[error("cannot connect to NATS at {url}: {source} (is nats-server running, with JetStream enabled by `-js`?)")]
    Connect {
        /// The address tried.
        url: String,
        /// The client's error.
        #[source]
        source: ConnectError,
    },
    /// A stream could not be declared.
    #[error("cannot declare the JetStream stream `{stream}`: {source}")]
    Stream {
        /// The stream.
        stream: String,
        /// The client's error.
        #[source]
        source: CreateStreamError,
    },
    /// A durable consumer could not be created or updated.
    #[error("cannot create the durable consumer `{consumer}` on the stream `{stream}`: {source}")]
    Consumer {
        /// The stream.
        stream: String,
        /// The consumer.
        consumer: String,
        /// The client's error.
        #[source]
        source: ConsumerError,
    },
    /// The consumers of a stream could not be listed (to find a partition's newest).
    #[error("cannot list the consumers of the stream `{stream}`: {source}")]
    Consumers {
        /// The stream.
        stream: String,
        /// The client's error.
        #[source]
        source: async_nats::Error,
    },
    /// A partition's consumer was replaced by a newer generation while it was being
    /// opened (another process rewound it): opened again.
    #[error("the consumer `{consumer}` was replaced by a newer generation while it was being opened: opening the newest")]
    Superseded {
        /// The replaced consumer.
        consumer: String,
    },
    /// A publish was not acknowledged.
    #[error("publish to `{subject}` not acknowledged: {source}")]
    Publish {
        /// The subject.
        subject: String,
        /// The client's error.
        #[source]
        source: PublishError,
    },
    /// The stream records another partition count than this process's.
    #[error("this process is configured with {configured} partitions, but the stream `{stream}` was declared with {declared} (its description says `bandeja-partitions={declared}`): set `partitions` to {declared} — every publisher and consumer of one system must agree; to change the count, stop every service and recreate the streams")]
    PartitionMismatch {
        /// The stream.
        stream: String,
        /// This process's count.
        configured: u16,
        /// The count recorded on the stream.
        declared: u16,
    },
    /// A message for a partition this transport does not have.
    #[error("partition {partition} is out of range: this transport has {partitions} partitions")]
    Partition {
        /// The message's partition.
        partition: u16,
        /// The transport's partition count.
        partitions: u16,
    },
}

impl NatsError {
    /// Whether retrying later can help (the server unreachable, slow, restarting) as opposed
    /// to a refusal that will repeat (a message too large, a conflicting configuration).
    pub fn is_unavailable(&self) -> bool {
        match self {
            NatsError::Options(_)
            | NatsError::Partition { .. }
            | NatsError::PartitionMismatch { .. } => false,
            NatsError::Connect { source, .. } => !matches!(
                source.kind(),
                ConnectErrorKind::ServerParse
                    | ConnectErrorKind::Authentication
                    | ConnectErrorKind::AuthorizationViolation
                    | ConnectErrorKind::Tls
            ),
            NatsError::Stream { source, .. } => {
                !matches!(source.kind(), CreateStreamErrorKind::JetStream(_))
            }
            NatsError::Consumer { source, .. } => match source.kind() {
                ConsumerErrorKind::JetStream(error) => {
                    error.error_code() == ErrorCode::STREAM_NOT_FOUND
                }
                ConsumerErrorKind::InvalidName | ConsumerErrorKind::InvalidConsumerType => false,
                _ => true,
            },
            NatsError::Consumers { .. } | NatsError::Superseded { .. } => true,
            NatsError::Publish { source, .. } => !publish_refused(source),
        }
    }
}

/// A publish the server refused for the message itself (its size).
fn publish_refused(error: &PublishError) -> bool {
    if error.kind() == PublishErrorKind::MaxPayloadExceeded {
        return true;
    }
    std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<async_nats::jetstream::Error>())
        .is_some_and(|error| {
            let code = error.error_code();
            code == ErrorCode::STREAM_MESSAGE_EXCEEDS_MAXIMUM
                || code == ErrorCode::STREAM_HEADER_EXCEEDS_MAXIMUM
        })
}

/// Whether a publish failed because the stream does not exist (a server restarted without
/// its store): the streams are declared again.
pub(crate) fn stream_missing(error: &NatsError) -> bool {
    matches!(error, NatsError::Publish { source, .. } if source.kind() == PublishErrorKind::StreamNotFound)
}

impl From<NatsError> for TransportError {
    fn from(error: NatsError) -> Self {
        if error.is_unavailable() {
            TransportError::unavailable(error)
        } else {
            TransportError::rejected(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bandeja_core::transport::TransportErrorKind;

    #[test]
    fn kinds_follow_what_retrying_can_fix() {
        let too_big = NatsError::Publish {
            subject: "s".into(),
            source: PublishError::new(PublishErrorKind::MaxPayloadExceeded),
        };
        assert_eq!(
            TransportError::from(too_big).kind(),
            TransportErrorKind::Rejected
        );
        for kind in [
            PublishErrorKind::TimedOut,
            PublishErrorKind::StreamNotFound,
            PublishErrorKind::BrokenPipe,
        ] {
            let error = NatsError::Publish {
                subject: "s".into(),
                source: PublishError::new(kind),
            };
            assert_eq!(
                TransportError::from(error).kind(),
                TransportErrorKind::Unavailable
            );
        }
        let options = TransportError::from(NatsError::from(OptionsError::NoPartitions));
        assert_eq!(options.kind(), TransportErrorKind::Rejected);
        assert!(options.to_string().contains("partitions"), "{options}");
    }
}
