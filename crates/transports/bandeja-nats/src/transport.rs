//! [`NatsTransport`]: connect, declare the streams, publish, subscribe.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, Context};
use async_nats::ConnectOptions;
use async_trait::async_trait;
use bandeja_core::reception::InboxSink;
use bandeja_core::transport::routing::token;
use bandeja_core::transport::{
    Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
};
use bandeja_core::MessageKind;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::consume::Partition;
use crate::consumer::consumer_config;
use crate::error::NatsError;
use crate::names::Names;
use crate::options::NatsOptions;
use crate::publish::Publisher;
use crate::streams;

/// How long [`Subscription::stop`] lets the partition tasks finish the batch in hand
/// before aborting them.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The NATS JetStream transport. Cheap to clone (clones share the connection).
#[derive(Clone)]
pub struct NatsTransport {
    jetstream: Context,
    names: Names,
    options: NatsOptions,
}

impl std::fmt::Debug for NatsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsTransport")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The pause before reconnection attempt `attempts`: none for the first, then 50 ms
/// doubling up to [`MAX_RECONNECT_DELAY`].
fn reconnect_delay(attempts: usize) -> Duration {
    if attempts <= 1 {
        return Duration::ZERO;
    }
    let doublings = u32::try_from(attempts - 2).unwrap_or(u32::MAX).min(8);
    (Duration::from_millis(50) * 2u32.pow(doublings)).min(MAX_RECONNECT_DELAY)
}

/// The longest pause between two reconnection attempts.
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(1);

impl NatsTransport {
    /// Checks `options`, connects (a server that is down is an error here; once connected,
    /// the client reconnects by itself for as long as it takes) and declares the two streams.
    /// Refuses to start when the streams of this prefix were declared with another
    /// partition count ([`NatsError::PartitionMismatch`], naming both counts).
    ///
    /// The error's source is a [`NatsError`].
    pub async fn connect(options: NatsOptions) -> Result<NatsTransport, TransportError> {
        options.validate().map_err(NatsError::from)?;
        let servers: Vec<&str> = options
            .url
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let client = ConnectOptions::new()
            .name(format!("bandeja ({})", options.prefix))
            .connection_timeout(options.connect_timeout)
            .max_reconnects(None)
            // The client's own delay grows to 4 s; capped lower, publishing and consuming
            // resume about a second after the server is back.
            .reconnect_delay_callback(reconnect_delay)
            .connect(servers)
            .await
            .map_err(|source| NatsError::Connect {
                url: options.url.clone(),
                source,
            })?;
        let transport = NatsTransport {
            jetstream: jetstream::new(client),
            names: Names::new(&options.prefix),
            options,
        };
        for kind in [MessageKind::Event, MessageKind::Command] {
            transport.declare_stream(kind).await?;
        }
        tracing::info!(url = %transport.options.url, prefix = %transport.options.prefix, partitions = transport.options.partitions, "NATS JetStream transport connected");
        Ok(transport)
    }

    /// The options it was connected with.
    pub fn options(&self) -> &NatsOptions {
        &self.options
    }

    /// The stream of a kind: `<PREFIX>_EVENTS` or `<PREFIX>_COMMANDS`.
    pub fn stream(&self, kind: MessageKind) -> String {
        self.names.stream(kind)
    }

    /// The subject a message of `address` on `partition` is published to:
    /// `<prefix>.<events|commands>.p<partition>.<token(address)>`.
    pub fn subject(&self, kind: MessageKind, partition: u16, address: &str) -> String {
        self.names.subject(kind, partition, address)
    }

    async fn declare_stream(&self, kind: MessageKind) -> Result<(), NatsError> {
        let config = streams::config(
            &self.names,
            kind,
            self.options.max_age,
            self.options.partitions,
        );
        streams::declare(&self.jetstream, config).await
    }

    /// The consumer loop of one partition for `request`.
    fn partition(
        &self,
        request: &SubscribeRequest,
        partition: u16,
        addresses: &Arc<HashSet<String>>,
        sink: &Arc<dyn InboxSink>,
        stop: &watch::Receiver<bool>,
    ) -> Partition {
        let kind = request.kind;
        let batch_size = request.batch_size.max(1);
        Partition {
            jetstream: self.jetstream.clone(),
            stream: streams::config(
                &self.names,
                kind,
                self.options.max_age,
                self.options.partitions,
            ),
            config: consumer_config(
                Names::consumer(&request.service, kind, partition),
                self.names.partition_filter(kind, partition),
                self.options.ack_wait,
                batch_size,
            ),
            subjects: self.names.partition_prefix(kind, partition),
            addresses: addresses.clone(),
            wanted: addresses.as_ref().clone(),
            refreshed_at: None,
            resume: None,
            kind,
            batch_size,
            fetch_wait: self.options.fetch_wait,
            sink: sink.clone(),
            stop: stop.clone(),
        }
    }
}

#[async_trait]
impl Transport for NatsTransport {
    fn name(&self) -> &str {
        "nats"
    }

    fn partitions(&self) -> u16 {
        self.options.partitions
    }

    async fn publish(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> Vec<Result<(), TransportError>> {
        let publisher = Publisher {
            jetstream: &self.jetstream,
            names: &self.names,
            partitions: self.options.partitions,
        };
        let (results, stream_missing) = publisher.publish(kind, messages, deadline).await;
        if stream_missing {
            // A server that restarted without its store: the next attempt finds the stream.
            match self.declare_stream(kind).await {
                Ok(()) => {
                    tracing::warn!(stream = %self.names.stream(kind), "the stream was missing: declared it again")
                }
                Err(error) => {
                    tracing::warn!(%error, "the stream is missing and declaring it failed")
                }
            }
        }
        results
    }

    async fn subscribe(
        &self,
        request: SubscribeRequest,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        let (stop, stop_rx) = watch::channel(false);
        let addresses: Arc<HashSet<String>> =
            Arc::new(request.addresses.iter().map(|a| token(a)).collect());
        // Opened together: opening one may watch its floor for a while.
        let partitions: Vec<Partition> = (0..self.options.partitions)
            .map(|partition| self.partition(&request, partition, &addresses, &sink, &stop_rx))
            .collect();
        let consumers =
            futures::future::try_join_all(partitions.iter().map(Partition::open)).await?;
        let ready: Vec<_> = partitions.into_iter().zip(consumers).collect();
        let tasks = ready
            .into_iter()
            .map(|(partition, consumer)| tokio::spawn(partition.run(consumer)))
            .collect();
        tracing::info!(service = %request.service, kind = ?request.kind, addresses = ?request.addresses, partitions = self.options.partitions, "consuming from NATS JetStream");
        Ok(Box::new(NatsSubscription { stop, tasks }))
    }
}

/// The partition tasks of one subscription.
struct NatsSubscription {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

#[async_trait]
impl Subscription for NatsSubscription {
    async fn stop(self: Box<Self>) {
        let NatsSubscription { stop, mut tasks } = *self;
        let _ = stop.send(true);
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        for task in &mut tasks {
            if tokio::time::timeout_at(deadline, task).await.is_err() {
                break;
            }
        }
        // A sink that never returns (a hung database) must not keep the subscription alive;
        // what it had not acknowledged is delivered again after `ack_wait`.
        for task in &tasks {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnection_starts_at_once_and_never_waits_more_than_a_second() {
        assert_eq!(reconnect_delay(0), Duration::ZERO);
        assert_eq!(reconnect_delay(1), Duration::ZERO);
        assert_eq!(reconnect_delay(2), Duration::from_millis(50));
        assert_eq!(reconnect_delay(3), Duration::from_millis(100));
        assert_eq!(reconnect_delay(50), MAX_RECONNECT_DELAY);
        assert_eq!(reconnect_delay(usize::MAX), MAX_RECONNECT_DELAY);
    }
}
