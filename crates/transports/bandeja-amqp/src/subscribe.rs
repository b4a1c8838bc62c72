//! The receiving side: one durable single-active-consumer queue per partition of a
//! consuming service, one task per queue that hands batches to the inbox sink and
//! acknowledges them only once stored.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bandeja_core::reception::InboxSink;
use bandeja_core::transport::{SubscribeRequest, Subscription};
use futures::{FutureExt, StreamExt};
use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::{FieldTable, ShortString};
use lapin::{Channel, Consumer};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::connection::{Backoff, Link, Settings};
use crate::error::AmqpError;
use crate::names;

/// How long [`Subscription::stop`] lets the tasks finish the batch in hand.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The first pause before storing a batch again after the inbox failed.
const FIRST_STORE_RETRY: Duration = Duration::from_millis(100);

/// The longest pause between two attempts to store a batch.
const MAX_STORE_RETRY: Duration = Duration::from_secs(5);

/// Declares the queues and bindings of `request` and starts one consumer task per
/// partition. Returns only once every queue is declared and bound: `Bandeja::start` starts
/// the outbox workers after that, so an event this process publishes to its own
/// subscriptions is never dropped for want of a bound queue.
pub(crate) async fn subscribe(
    settings: Arc<Settings>,
    request: SubscribeRequest,
    sink: Arc<dyn InboxSink>,
) -> Result<AmqpSubscription, AmqpError> {
    let partitions = settings.options.partitions;
    let queues = (0..partitions)
        .map(|p| names::queue(&settings.options.prefix, &request.service, request.kind, p))
        .collect::<Result<Vec<_>, _>>()?;
    for address in &request.addresses {
        names::routing_key(partitions.saturating_sub(1), address)?;
    }
    let link = Arc::new(Link::new(
        settings.clone(),
        format!("{} {}", request.service, names::plural(request.kind)),
    ));
    let declared = declare_all(&settings, &link, &request, &queues).await;
    if let Err(error) = declared {
        link.close().await;
        return Err(error);
    }
    let (stop, stopped) = watch::channel(false);
    let request = Arc::new(request);
    let mut tasks = JoinSet::new();
    for (partition, queue) in (0..partitions).zip(queues) {
        let consumer = PartitionConsumer {
            settings: settings.clone(),
            link: link.clone(),
            request: request.clone(),
            sink: sink.clone(),
            partition,
            queue,
            stop: stopped.clone(),
        };
        tasks.spawn(consumer.run());
    }
    tracing::info!(
        service = %request.service,
        kind = names::plural(request.kind),
        partitions,
        addresses = ?request.addresses,
        "AMQP subscription started"
    );
    Ok(AmqpSubscription { stop, tasks, link })
}

/// Declares every partition queue and its bindings on one channel.
async fn declare_all(
    settings: &Settings,
    link: &Link,
    request: &SubscribeRequest,
    queues: &[ShortString],
) -> Result<(), AmqpError> {
    let channel = link.channel().await?;
    for (partition, queue) in (0..settings.options.partitions).zip(queues) {
        settings
            .declare_queue(&channel, request.kind, queue, partition, &request.addresses)
            .await?;
    }
    let _ = channel.close(200, "declared".into()).await;
    Ok(())
}

/// A running subscription: its partition tasks and their connection.
#[derive(Debug)]
pub(crate) struct AmqpSubscription {
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
    link: Arc<Link>,
}

#[async_trait]
impl Subscription for AmqpSubscription {
    async fn stop(self: Box<Self>) {
        let AmqpSubscription {
            stop,
            mut tasks,
            link,
        } = *self;
        let _ = stop.send(true);
        let finished = tokio::time::timeout(STOP_GRACE, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if finished.is_err() {
            tracing::warn!(
                tasks = tasks.len(),
                "AMQP consumers did not finish their batch in time: aborted (RabbitMQ redelivers what they had not acknowledged)"
            );
            tasks.shutdown().await;
        }
        // Closing the connection closes every channel, also those of aborted tasks: RabbitMQ
        // requeues their unacknowledged messages.
        link.close().await;
    }
}

/// How a consuming session ended.
enum End {
    /// The subscription is stopping.
    Stopped,
    /// The channel or connection broke, or the broker cancelled the consumer.
    Broken(AmqpError),
}

/// The consumer of one partition queue.
struct PartitionConsumer {
    settings: Arc<Settings>,
    link: Arc<Link>,
    request: Arc<SubscribeRequest>,
    sink: Arc<dyn InboxSink>,
    partition: u16,
    queue: ShortString,
    stop: watch::Receiver<bool>,
}

impl PartitionConsumer {
    /// Consumes until stopped, reconnecting after any failure.
    async fn run(mut self) {
        let mut backoff = Backoff::new(self.settings.options.reconnect_max_backoff);
        let mut resuming = false; // the next start follows an interruption
        loop {
            // A broker that accepts the connection but never answers (one still booting)
            // must not hold the partition forever: the whole start has a deadline.
            let deadline = self.settings.options.connect_timeout.saturating_mul(2);
            let started = tokio::time::timeout(deadline, self.start())
                .await
                .unwrap_or_else(|_| {
                    Err(AmqpError::ConnectTimeout {
                        url: crate::options::redacted(&self.settings.uri),
                        after: deadline,
                    })
                });
            let error = match started {
                Ok((channel, consumer)) => {
                    if resuming {
                        tracing::info!(queue = %self.queue, "AMQP consumer resumed");
                    }
                    resuming = true;
                    backoff.reset();
                    let end = self.consume(&channel, consumer).await;
                    let _ = channel.close(200, "bandeja: consumer done".into()).await;
                    match end {
                        End::Stopped => return,
                        End::Broken(error) => error,
                    }
                }
                Err(AmqpError::Stopped) => return,
                Err(error) => {
                    resuming = true;
                    error
                }
            };
            let pause = backoff.next();
            tracing::warn!(queue = %self.queue, %error, retry_in = ?pause, "AMQP consumer interrupted: reconnecting");
            if self.pause(pause).await {
                return;
            }
        }
    }

    /// Opens a channel, (re)declares the queue and its bindings, and starts consuming.
    async fn start(&self) -> Result<(Channel, Consumer), AmqpError> {
        let channel = self.link.channel().await?;
        self.settings
            .declare_queue(
                &channel,
                self.request.kind,
                &self.queue,
                self.partition,
                &self.request.addresses,
            )
            .await?;
        let prefetch = u16::try_from(self.request.batch_size.max(1)).unwrap_or(u16::MAX);
        channel
            .basic_qos(prefetch, BasicQosOptions::default())
            .await
            .map_err(|e| AmqpError::channel("set the prefetch count", e))?;
        let consumer = channel
            .basic_consume(
                self.queue.clone(),
                ShortString::default(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| AmqpError::channel(format!("consume queue `{}`", self.queue), e))?;
        Ok((channel, consumer))
    }

    /// Takes batches, stores them, acknowledges them; returns when stopped or broken.
    async fn consume(&mut self, channel: &Channel, mut consumer: Consumer) -> End {
        let batch_size = self.request.batch_size.max(1);
        loop {
            // A connection that died while this consumer waited does not always end its
            // stream: check the channel every LIVENESS_CHECK and start over if it is gone.
            let first = loop {
                tokio::select! {
                    biased;
                    () = stopped(&mut self.stop) => return End::Stopped,
                    next = consumer.next() => break next,
                    () = tokio::time::sleep(LIVENESS_CHECK) => {
                        if !channel.status().connected() {
                            return End::Broken(AmqpError::ChannelLost {
                                queue: self.queue.to_string(),
                            });
                        }
                    }
                }
            };
            let mut batch = match first {
                Some(Ok(delivery)) => vec![delivery],
                Some(Err(error)) => return End::Broken(AmqpError::channel("consume", error)),
                None => return End::Broken(cancelled(&self.queue)),
            };
            let mut ended = None;
            while batch.len() < batch_size {
                match consumer.next().now_or_never() {
                    Some(Some(Ok(delivery))) => batch.push(delivery),
                    Some(Some(Err(error))) => {
                        ended = Some(AmqpError::channel("consume", error));
                        break;
                    }
                    Some(None) => {
                        ended = Some(cancelled(&self.queue));
                        break;
                    }
                    None => break,
                }
            }
            if !self.store(&batch).await {
                return End::Stopped;
            }
            if let Err(error) = acknowledge(&self.queue, &batch).await {
                return End::Broken(error);
            }
            if let Some(error) = ended {
                return End::Broken(error);
            }
        }
    }

    /// Hands the batch to the sink until it is stored (`true`) or the subscription stops
    /// (`false`), never moving past it.
    async fn store(&mut self, batch: &[Delivery]) -> bool {
        let bodies: Vec<&[u8]> = batch.iter().map(|d| d.data.as_slice()).collect();
        let mut pause = FIRST_STORE_RETRY;
        loop {
            match self.sink.accept(self.request.kind, &bodies).await {
                Ok(report) => {
                    tracing::debug!(queue = %self.queue, messages = bodies.len(), inserted = report.inserted, duplicates = report.duplicates, "stored");
                    return true;
                }
                Err(error) => {
                    tracing::warn!(queue = %self.queue, messages = bodies.len(), %error, retry_in = ?pause, "the inbox did not store a batch: retrying it");
                    if self.pause(pause).await {
                        return false;
                    }
                    pause = (pause * 2).min(MAX_STORE_RETRY);
                }
            }
        }
    }

    /// Sleeps for `pause`; `true` if the subscription stopped meanwhile.
    async fn pause(&mut self, pause: Duration) -> bool {
        tokio::select! {
            biased;
            () = stopped(&mut self.stop) => true,
            () = tokio::time::sleep(pause) => false,
        }
    }
}

/// How often a waiting consumer checks that its channel is still connected.
const LIVENESS_CHECK: Duration = Duration::from_secs(1);

/// How long an acknowledgement may take before the channel is considered lost (the batch
/// is then delivered again and absorbed by the inbox).
const ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// Acknowledges a batch with one `basic.ack` (multiple) of its last delivery.
async fn acknowledge(queue: &ShortString, batch: &[Delivery]) -> Result<(), AmqpError> {
    let Some(last) = batch.last() else {
        return Ok(());
    };
    let acked = tokio::time::timeout(
        ACK_TIMEOUT,
        last.acker.ack(BasicAckOptions { multiple: true }),
    )
    .await
    .unwrap_or_else(|_| Ok(false));
    match acked {
        Ok(true) => Ok(()),
        Ok(false) => Err(AmqpError::NotAcknowledged {
            queue: queue.to_string(),
        }),
        Err(error) => Err(AmqpError::channel(
            format!("acknowledge on `{queue}`"),
            error,
        )),
    }
}

/// The error of a consumer the broker cancelled (its queue deleted, for instance).
fn cancelled(queue: &ShortString) -> AmqpError {
    AmqpError::ConsumerCancelled {
        queue: queue.to_string(),
    }
}

/// Resolves once the subscription is stopped (never if its handle was dropped: dropping a
/// subscription does not stop it).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|stopped| *stopped).await.is_err() {
        std::future::pending::<()>().await;
    }
}
