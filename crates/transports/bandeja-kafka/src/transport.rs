//! [`KafkaTransport`]: the [`Transport`] on Kafka.

use std::sync::Arc;

use async_trait::async_trait;
use bandeja_core::reception::InboxSink;
use bandeja_core::record::MessageKind;
use bandeja_core::transport::{
    Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
};

use crate::error::KafkaError;
use crate::options::KafkaOptions;
use crate::publish::Publisher;
use crate::settings::Settings;
use crate::subscribe;
use crate::topics::Topics;

/// The Kafka transport. See the [crate documentation](crate) for the topics, groups and
/// guarantees.
pub struct KafkaTransport {
    settings: Arc<Settings>,
    topics: Arc<Topics>,
    publisher: Publisher,
}

impl std::fmt::Debug for KafkaTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaTransport")
            .field("options", &self.settings.options)
            .finish_non_exhaustive()
    }
}

impl KafkaTransport {
    /// Checks `options`, reaches the brokers (within `request_timeout`), and makes sure the
    /// events topic exists with the configured partition count (creating it when
    /// `create_topics` is on; another count is [`KafkaError::PartitionMismatch`], naming
    /// both).
    ///
    /// Errors: invalid options, a topic with another partition count or missing (with
    /// `create_topics` off) are
    /// [`Rejected`](bandeja_core::transport::TransportErrorKind::Rejected), unreachable
    /// brokers [`Unavailable`](bandeja_core::transport::TransportErrorKind::Unavailable);
    /// the source is a [`KafkaError`] saying which.
    pub async fn connect(options: KafkaOptions) -> Result<KafkaTransport, TransportError> {
        let settings = Arc::new(Settings::new(options)?);
        let topics = Arc::new(Topics::new(settings.clone())?);
        topics.reach().await?;
        topics
            .ensure(&settings.names.topic(MessageKind::Event, ""))
            .await?;
        let publisher = Publisher::new(settings.clone(), topics.clone())?;
        Ok(KafkaTransport {
            settings,
            topics,
            publisher,
        })
    }

    /// The options it was connected with.
    pub fn options(&self) -> &KafkaOptions {
        &self.settings.options
    }

    /// The topic a message of `kind` with `address` (an event's type, a command's topic)
    /// is published to: `<prefix>.events` or `<prefix>.commands.<topic>`.
    pub fn topic(&self, kind: MessageKind, address: &str) -> String {
        self.settings.names.topic(kind, address)
    }

    /// The consumer group of `service`'s messages of `kind`:
    /// `<prefix>.<service>.<events|commands>`.
    pub fn group(&self, service: &str, kind: MessageKind) -> String {
        subscribe::group(&self.settings.options.prefix, service, kind)
    }
}

#[async_trait]
impl Transport for KafkaTransport {
    fn name(&self) -> &str {
        "kafka"
    }

    fn partitions(&self) -> u16 {
        self.settings.options.partitions
    }

    async fn publish(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> Vec<Result<(), TransportError>> {
        self.publisher.publish(kind, messages, deadline).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequest,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        let subscription =
            subscribe::subscribe(self.settings.clone(), self.topics.clone(), request, sink)
                .await
                .map_err(|error: KafkaError| TransportError::from(error))?;
        Ok(Box::new(subscription))
    }
}
