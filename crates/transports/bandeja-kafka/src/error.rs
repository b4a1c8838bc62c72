//! The errors of this crate. Each reaches the core as the `source` of a
//! [`TransportError`] whose kind tells the dispatcher what to do: brokers that are down or
//! slow are [`Unavailable`](bandeja_core::transport::TransportErrorKind::Unavailable)
//! (retried later without spending retries); options, a topic with another partition
//! count, or a message the brokers can never take are
//! [`Rejected`](bandeja_core::transport::TransportErrorKind::Rejected): they spend a retry
//! each and end FAILED with the reason.

use bandeja_core::transport::TransportError;
use rdkafka::error::{KafkaError as ClientError, RDKafkaErrorCode};

/// What went wrong talking to Kafka.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum KafkaError {
    /// The options are not usable (the message names the option).
    #[error("invalid Kafka options: {0}")]
    InvalidOptions(String),
    /// librdkafka refused the configuration of a client.
    #[error("cannot create the Kafka {client}: {source} (check `client_config`)")]
    Client {
        /// Which client (`producer`, `consumer`, `admin client`).
        client: &'static str,
        /// The client's error.
        #[source]
        source: ClientError,
    },
    /// The brokers did not answer a metadata request.
    #[error("cannot reach the Kafka brokers at {servers}: {source} (are they running?)")]
    Unreachable {
        /// The bootstrap servers.
        servers: String,
        /// The client's error.
        #[source]
        source: ClientError,
    },
    /// The metadata request could not be made.
    #[error("cannot read the Kafka topics' metadata: {0}")]
    Metadata(String),
    /// Creating a topic failed.
    #[error("cannot create the Kafka topic `{topic}`: {reason}")]
    CreateTopic {
        /// The topic.
        topic: String,
        /// The brokers' answer.
        reason: String,
        /// Whether retrying cannot help (a replication factor, name, policy or
        /// authorization the brokers refuse).
        permanent: bool,
    },
    /// A topic is missing and `create_topics` is off.
    #[error("the Kafka topic `{topic}` does not exist (or is not visible to this client): create it with {partitions} partitions, or turn `create_topics` on")]
    MissingTopic {
        /// The topic.
        topic: String,
        /// The partition count it needs.
        partitions: u16,
    },
    /// A topic exists with another partition count than this process's.
    #[error("the Kafka topic `{topic}` has {found} partitions, but this process is configured with {configured}: every process of the prefix must use the topics' count (set `partitions` to {found}), or give this system a new prefix")]
    PartitionMismatch {
        /// The topic.
        topic: String,
        /// Its partition count.
        found: usize,
        /// This process's.
        configured: u16,
    },
    /// The producer did not take a message, or the brokers did not acknowledge it.
    #[error("Kafka refused the message: {0}")]
    Produce(ClientError),
    /// The consumer failed (subscribing, or fetching).
    #[error("the Kafka consumer failed: {0}")]
    Consume(ClientError),
}

impl KafkaError {
    /// Whether retrying later can help (the brokers may come back).
    pub fn is_transient(&self) -> bool {
        match self {
            KafkaError::InvalidOptions(_)
            | KafkaError::Client { .. }
            | KafkaError::MissingTopic { .. }
            | KafkaError::PartitionMismatch { .. }
            | KafkaError::CreateTopic {
                permanent: true, ..
            } => false,
            KafkaError::Produce(error) => !is_permanent_produce_error(error),
            _ => true,
        }
    }
}

/// A produce error no retry can mend: the message is too large, or it can never be
/// serialized for the brokers.
fn is_permanent_produce_error(error: &ClientError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::MessageSizeTooLarge
                | RDKafkaErrorCode::InvalidMessageSize
                | RDKafkaErrorCode::InvalidMessage
                | RDKafkaErrorCode::TopicAuthorizationFailed
                | RDKafkaErrorCode::InvalidRecord
        )
    )
}

impl From<KafkaError> for TransportError {
    fn from(error: KafkaError) -> Self {
        if error.is_transient() {
            TransportError::unavailable(error)
        } else {
            TransportError::rejected(error)
        }
    }
}
