//! Receiving: one task per partition pulls a batch from the service's durable consumer of
//! that partition, hands the bodies of the subscribed addresses to the inbox sink and
//! acknowledges them only once stored. A batch that could not be stored is retried, never
//! skipped, so a partition never stores a later message before an earlier one.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{pull, AckPolicy, DeliverPolicy, PullConsumer};
use async_nats::jetstream::stream::ConsumerErrorKind;
use async_nats::jetstream::{AckKind, Context, ErrorCode, Message};
use bandeja_core::reception::InboxSink;
use bandeja_core::MessageKind;
use futures::StreamExt;
use tokio::sync::watch;

use crate::error::NatsError;
use crate::names::address_token;
use crate::streams;
use bandeja_core::transport::routing::token;

/// The first pause after a failure; it doubles up to the cap.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between two tries: short, so consuming resumes about a second after
/// an outage ends.
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// The pause before pulling a partition again that another process of the service holds
/// (its batch in flight): short, since that batch is being stored and acknowledged.
const BUSY_PAUSE: Duration = Duration::from_millis(20);
/// How often a consumer reads the service's subscribed addresses again even when every
/// message it receives is wanted (so an address retired stops being stored).
const REFRESH_WANTED: Duration = Duration::from_secs(10);
/// How long a pull waits right after one that brought messages.
const BACKLOG_FETCH_WAIT: Duration = Duration::from_millis(50);
/// How long past `fetch_wait` an empty pull may take before it counts as unanswered (the
/// server answers an expired pull itself; the client gives up 5 s after `fetch_wait`).
const NO_ANSWER_MARGIN: Duration = Duration::from_secs(3);

/// The configuration of a service's durable pull consumer on one partition.
pub(crate) fn consumer_config(
    name: String,
    filter: String,
    ack_wait: Duration,
    batch_size: usize,
) -> pull::Config {
    pull::Config {
        durable_name: Some(name),
        filter_subject: filter,
        ack_policy: AckPolicy::Explicit,
        ack_wait,
        max_ack_pending: i64::try_from(batch_size).unwrap_or(i64::MAX),
        deliver_policy: DeliverPolicy::All,
        max_deliver: -1,
        ..Default::default()
    }
}

/// Why a pull brought nothing usable.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("the pull request could not be sent: {0}")]
    Request(#[source] pull::BatchError),
    #[error("the server ended the pull: {0}")]
    Status(#[source] async_nats::Error),
    #[error("the server did not answer the pull (consumer or stream missing?)")]
    NoAnswer,
    /// Another process of the service holds the partition's in-flight messages
    /// (`max_ack_pending`): nothing is wrong, the partition is busy.
    #[error("another process holds the partition's messages in flight")]
    Busy,
}

/// One partition's consumer loop.
pub(crate) struct Partition {
    pub(crate) jetstream: Context,
    pub(crate) stream: async_nats::jetstream::stream::Config,
    pub(crate) config: pull::Config,
    /// The subjects of this partition up to the address (`<prefix>.<kind>.p<N>.`).
    pub(crate) subjects: String,
    /// The address tokens this process subscribed to (its own subscribers' types).
    pub(crate) addresses: Arc<HashSet<String>>,
    /// The address tokens this service consumes as last read from the database (the
    /// subscriptions of every process of the service), always with `addresses`.
    pub(crate) wanted: HashSet<String>,
    /// When `wanted` was last read from the database.
    pub(crate) refreshed_at: Option<Instant>,
    pub(crate) kind: MessageKind,
    pub(crate) batch_size: usize,
    pub(crate) fetch_wait: Duration,
    pub(crate) sink: Arc<dyn InboxSink>,
    pub(crate) stop: watch::Receiver<bool>,
}

impl Partition {
    fn name(&self) -> &str {
        self.config.durable_name.as_deref().unwrap_or("")
    }

    /// Creates the durable consumer, or updates it to this configuration (declaring the
    /// stream again first when a server restarted without its store).
    pub(crate) async fn ensure_consumer(&self) -> Result<PullConsumer, NatsError> {
        let create = || {
            self.jetstream
                .create_consumer_on_stream(self.config.clone(), self.stream.name.as_str())
        };
        let result = match create().await {
            Err(error) if stream_missing(&error) => {
                streams::declare(&self.jetstream, self.stream.clone()).await?;
                create().await
            }
            result => result,
        };
        result.map_err(|source| NatsError::Consumer {
            stream: self.stream.name.clone(),
            consumer: self.name().to_owned(),
            source,
        })
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Waits `pause` unless stopped first; `false` when stopped.
    async fn pause(&mut self, pause: Duration) -> bool {
        if self.stopped() {
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => !self.stopped(),
            _ = self.stop.changed() => false,
        }
    }

    /// Pulls and stores until stopped; survives outages of any length.
    pub(crate) async fn run(mut self, consumer: PullConsumer) {
        let mut consumer = Some(consumer);
        let mut backoff = Backoff::new(MAX_PAUSE);
        let mut backlog = false;
        while !self.stopped() {
            let current = match consumer.take() {
                Some(current) => current,
                None => match self.ensure_consumer().await {
                    Ok(current) => current,
                    Err(error) => {
                        tracing::warn!(consumer = self.name(), %error, "recreating the consumer failed: retrying");
                        if !self.pause(backoff.next()).await {
                            return;
                        }
                        continue;
                    }
                },
            };
            // After a pull that brought messages there is likely a backlog: pull with a short
            // wait. A pull waits to fill its batch, and when several processes of the service
            // share the partition (its in-flight limit is one batch), none can fill one: a
            // long wait would cost each of them the whole of it on every pull.
            let wait = if backlog {
                BACKLOG_FETCH_WAIT.min(self.fetch_wait)
            } else {
                self.fetch_wait
            };
            match self.fetch(&current, wait).await {
                Ok(messages) => {
                    backlog = !messages.is_empty();
                    backoff.reset();
                    consumer = Some(current);
                    if !self.deliver(messages).await {
                        return;
                    }
                }
                Err(FetchError::Busy) => {
                    // Several processes of a service share the partition's consumer; the
                    // one holding its in-flight batch acknowledges it soon.
                    consumer = Some(current);
                    if !self.pause(BUSY_PAUSE).await {
                        return;
                    }
                }
                Err(error) => {
                    // The handle is dropped: the consumer is created again before the next pull.
                    tracing::warn!(consumer = self.name(), %error, "pulling failed: retrying");
                    if !self.pause(backoff.next()).await {
                        return;
                    }
                }
            }
        }
    }

    /// One pull: up to a batch, waiting at most `wait`.
    async fn fetch(
        &self,
        consumer: &PullConsumer,
        wait: Duration,
    ) -> Result<Vec<Message>, FetchError> {
        let started = Instant::now();
        let mut batch = consumer
            .fetch()
            .max_messages(self.batch_size)
            .expires(wait)
            .messages()
            .await
            .map_err(FetchError::Request)?;
        let mut messages = Vec::new();
        while let Some(item) = batch.next().await {
            match item {
                Ok(message) => messages.push(message),
                // What arrived before the error is a valid delivery: store it.
                Err(error) if messages.is_empty() && max_ack_pending_reached(&*error) => {
                    return Err(FetchError::Busy)
                }
                Err(error) if messages.is_empty() => return Err(FetchError::Status(error)),
                Err(error) => {
                    tracing::debug!(consumer = self.name(), %error, "pull ended early");
                    break;
                }
            }
        }
        if messages.is_empty() && started.elapsed() > wait + NO_ANSWER_MARGIN {
            return Err(FetchError::NoAnswer);
        }
        Ok(messages)
    }

    /// Whether this service consumes the address of a subject.
    fn wanted(&self, message: &Message) -> bool {
        address_token(message.subject.as_str(), &self.subjects)
            .is_some_and(|address| self.wanted.contains(address))
    }

    /// Reads the addresses the service consumes from the database again (through the
    /// sink): another process of the service, of a newer version, may subscribe to types
    /// this one does not. `false` when that could not be read.
    async fn refresh_wanted(&mut self) -> bool {
        match self.sink.addresses(self.kind).await {
            Ok(Some(addresses)) => {
                self.wanted = self.addresses.as_ref().clone();
                self.wanted.extend(addresses.iter().map(|a| token(a)));
                self.refreshed_at = Some(Instant::now());
                true
            }
            Ok(None) => {
                self.refreshed_at = Some(Instant::now());
                true
            }
            Err(error) => {
                tracing::warn!(consumer = self.name(), %error, "reading the service's subscriptions failed");
                false
            }
        }
    }

    /// Stores the wanted messages of a batch (retrying until stored or stopped), then
    /// acknowledges them; acknowledges the others at once. Before it acknowledges a
    /// message it believes is not this service's, and at least every [`REFRESH_WANTED`],
    /// it reads the service's subscriptions again, so a type that another process of the
    /// service subscribed to is stored, never dropped. `false` when stopped first.
    async fn deliver(&mut self, messages: Vec<Message>) -> bool {
        let stale = self
            .refreshed_at
            .is_none_or(|at| at.elapsed() >= REFRESH_WANTED);
        if (stale || !messages.iter().all(|m| self.wanted(m))) && !self.refresh_wanted().await {
            // Unknown whether they are this service's: not acknowledged, redelivered.
            acknowledge(&messages, AckKind::Nak(Some(MAX_PAUSE))).await;
            return self.pause(MAX_PAUSE).await;
        }
        let (kept, skipped): (Vec<Message>, Vec<Message>) =
            messages.into_iter().partition(|m| self.wanted(m));
        if !skipped.is_empty() {
            tracing::trace!(
                consumer = self.name(),
                skipped = skipped.len(),
                "acknowledged messages of addresses this service does not consume"
            );
            acknowledge(&skipped, AckKind::Ack).await;
        }
        if kept.is_empty() {
            return true;
        }
        let bodies: Vec<&[u8]> = kept.iter().map(|m| m.payload.as_ref()).collect();
        let mut backoff = Backoff::new(MAX_PAUSE.min(self.config.ack_wait / 2));
        loop {
            match self.sink.accept(self.kind, &bodies).await {
                Ok(report) => {
                    acknowledge(&kept, AckKind::Ack).await;
                    tracing::debug!(
                        consumer = self.name(),
                        received = kept.len(),
                        inserted = report.inserted,
                        duplicates = report.duplicates,
                        "stored and acknowledged"
                    );
                    return true;
                }
                Err(error) => {
                    tracing::warn!(consumer = self.name(), messages = kept.len(), %error, "storing received messages failed: retrying the batch");
                    // Still ours: JetStream must not hand them to another process meanwhile.
                    acknowledge(&kept, AckKind::Progress).await;
                    if !self.pause(backoff.next()).await {
                        // Delivered again at once to the service's next process.
                        acknowledge(&kept, AckKind::Nak(None)).await;
                        return false;
                    }
                }
            }
        }
    }
}

/// Whether a pull ended with JetStream's `409 Exceeded MaxAckPending`: the client reports
/// the status only as text.
fn max_ack_pending_reached(error: &(dyn std::error::Error + Send + Sync)) -> bool {
    error
        .to_string()
        .to_ascii_lowercase()
        .contains("maxackpending")
}

/// Whether creating a consumer failed because its stream does not exist.
fn stream_missing(error: &async_nats::jetstream::stream::ConsumerError) -> bool {
    matches!(error.kind(), ConsumerErrorKind::JetStream(e) if e.error_code() == ErrorCode::STREAM_NOT_FOUND)
}

/// Acknowledges messages (an acknowledgement that does not reach the server only means a
/// redelivery, which the inbox absorbs).
async fn acknowledge(messages: &[Message], kind: AckKind) {
    for message in messages {
        if let Err(error) = message.ack_with(kind).await {
            tracing::debug!(%error, subject = %message.subject, "acknowledgement not sent");
        }
    }
}

/// Pauses from [`FIRST_PAUSE`] doubling up to a cap.
struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    fn new(max: Duration) -> Self {
        let max = max.max(FIRST_PAUSE);
        Backoff {
            next: FIRST_PAUSE,
            max,
        }
    }

    fn next(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        pause
    }

    fn reset(&mut self) {
        self.next = FIRST_PAUSE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_partition_is_told_apart_from_a_failed_pull() {
        // The text async-nats 0.51 gives a pull ended by `409 Exceeded MaxAckPending`.
        let busy = std::io::Error::other(
            "error while processing messages from the stream: 409, Some(\"Exceeded MaxAckPending\")",
        );
        assert!(max_ack_pending_reached(&busy));
        let gone = std::io::Error::other(
            "error while processing messages from the stream: 409, Some(\"Consumer Deleted\")",
        );
        assert!(!max_ack_pending_reached(&gone));
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let mut backoff = Backoff::new(Duration::from_millis(500));
        let pauses: Vec<u128> = (0..5).map(|_| backoff.next().as_millis()).collect();
        assert_eq!(pauses, [100, 200, 400, 500, 500]);
        backoff.reset();
        assert_eq!(backoff.next(), FIRST_PAUSE);
        assert_eq!(Backoff::new(Duration::ZERO).next(), FIRST_PAUSE);
    }

    #[test]
    fn consumers_ack_explicitly_and_take_a_batch_at_a_time() {
        let config = consumer_config(
            "inventory_events_p0".into(),
            "b.events.p0.>".into(),
            Duration::from_secs(2),
            50,
        );
        assert_eq!(config.max_ack_pending, 50);
        assert_eq!(config.ack_policy, AckPolicy::Explicit);
        assert_eq!(config.deliver_policy, DeliverPolicy::All);
        assert_eq!(config.max_deliver, -1);
        assert_eq!(config.durable_name.as_deref(), Some("inventory_events_p0"));
    }
}
