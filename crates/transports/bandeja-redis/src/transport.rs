//! [`RedisTransport`]: the [`Transport`] on Redis Streams.

use std::sync::Arc;

use async_trait::async_trait;
use bandeja_core::reception::InboxSink;
use bandeja_core::record::MessageKind;
use bandeja_core::transport::{
    Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
};

use crate::connection::{Link, Settings};
use crate::error::RedisError;
use crate::options::RedisOptions;
use crate::publish::Publisher;
use crate::subscribe;

/// The Redis Streams transport. See the [crate documentation](crate) for the streams,
/// groups and guarantees.
pub struct RedisTransport {
    settings: Arc<Settings>,
    link: Arc<Link>,
    publisher: Publisher,
}

impl std::fmt::Debug for RedisTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTransport")
            .field("options", &self.settings.options)
            .finish_non_exhaustive()
    }
}

impl RedisTransport {
    /// Checks `options`, connects (an error at once if the server is unreachable, after
    /// `connect_timeout` at most), checks that the server is Redis 6.2 or later, and
    /// records the partition count of the prefix or checks it against the one recorded
    /// ([`RedisError::PartitionMismatch`], naming both counts).
    ///
    /// Errors: invalid options, a server too old and another partition count are
    /// [`Rejected`](bandeja_core::transport::TransportErrorKind::Rejected), an unreachable
    /// server [`Unavailable`](bandeja_core::transport::TransportErrorKind::Unavailable);
    /// the source is a [`RedisError`] saying which.
    pub async fn connect(options: RedisOptions) -> Result<RedisTransport, TransportError> {
        let settings = Arc::new(Settings::new(options)?);
        let link = Arc::new(Link::new(settings.clone(), "publisher"));
        let mut connection = link.get().await?.connection;
        settings.check_server(&mut connection).await?;
        settings.check_partitions(&mut connection).await?;
        let publisher = Publisher::new(settings.clone(), link.clone());
        Ok(RedisTransport {
            settings,
            link,
            publisher,
        })
    }

    /// The options it was connected with.
    pub fn options(&self) -> &RedisOptions {
        &self.settings.options
    }

    /// The stream a message of `kind` with `address` (an event's type, a command's topic)
    /// on `partition` is added to: `<prefix>.events.p<N>` or
    /// `<prefix>.commands.<topic>.p<N>`.
    pub fn stream(&self, kind: MessageKind, address: &str, partition: u16) -> String {
        self.settings.names.stream(kind, address, partition)
    }
}

#[async_trait]
impl Transport for RedisTransport {
    fn name(&self) -> &str {
        "redis"
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
            subscribe::subscribe(self.settings.clone(), self.link.clone(), request, sink)
                .await
                .map_err(|error: RedisError| TransportError::from(error))?;
        Ok(Box::new(subscription))
    }
}
