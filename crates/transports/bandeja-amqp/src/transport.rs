//! [`AmqpTransport`]: the [`Transport`] on RabbitMQ.

use std::sync::Arc;

use async_trait::async_trait;
use bandeja_core::reception::InboxSink;
use bandeja_core::record::MessageKind;
use bandeja_core::transport::{
    Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
};

use crate::connection::Settings;
use crate::error::AmqpError;
use crate::options::AmqpOptions;
use crate::publish::Publisher;
use crate::subscribe;

/// The RabbitMQ transport. See the [crate documentation](crate) for the topology.
pub struct AmqpTransport {
    settings: Arc<Settings>,
    publisher: Publisher,
}

impl std::fmt::Debug for AmqpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmqpTransport")
            .field("options", &self.settings.options)
            .finish_non_exhaustive()
    }
}

impl AmqpTransport {
    /// Checks `options`, connects (an error at once if the broker is unreachable, after
    /// `connect_timeout` at most) and declares the exchanges `<prefix>.events` and
    /// `<prefix>.commands` (direct, durable; idempotent). Refuses to start when the services
    /// already on this prefix use another partition count ([`AmqpError::PartitionMismatch`],
    /// naming both counts).
    ///
    /// Errors: invalid options are [`Rejected`](bandeja_core::transport::TransportErrorKind::Rejected),
    /// an unreachable broker [`Unavailable`](bandeja_core::transport::TransportErrorKind::Unavailable);
    /// the source is an [`AmqpError`] saying which.
    pub async fn connect(options: AmqpOptions) -> Result<AmqpTransport, TransportError> {
        let uri = options.validate()?;
        let settings = Arc::new(Settings { options, uri });
        let publisher = Publisher::connect(settings.clone()).await?;
        Ok(AmqpTransport {
            settings,
            publisher,
        })
    }

    /// The options it was connected with.
    pub fn options(&self) -> &AmqpOptions {
        &self.settings.options
    }
}

#[async_trait]
impl Transport for AmqpTransport {
    fn name(&self) -> &str {
        "amqp"
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
        let subscription = subscribe::subscribe(self.settings.clone(), request, sink)
            .await
            .map_err(|error: AmqpError| TransportError::from(error))?;
        Ok(Box::new(subscription))
    }
}
