//! The receiving side: one consumer per subscription, in the group of its service and
//! kind; batches stored in the inbox in one call, and only then their offsets committed.
//!
//! Kafka's group assignment gives each partition to one consumer of the group at a time,
//! so one key's messages are stored by one process in order. At a rebalance, a process
//! may still be storing a batch of a partition that another one now fetches from the
//! last committed offset: both store the same messages in the same order, and the inbox
//! keeps the first copy of each, so nothing is stored twice and nothing out of order; the
//! first process's commit for a partition it no longer owns fails, which only means a
//! redelivery. Offsets are never committed for what was not stored.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bandeja_core::reception::InboxSink;
use bandeja_core::record::MessageKind;
use bandeja_core::transport::backoff::Backoff;
use bandeja_core::transport::{SubscribeRequest, Subscription};
use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance, StreamConsumer,
};
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::KafkaError;
use crate::names::TYPE_HEADER;
use crate::settings::Settings;
use crate::topics::Topics;

/// How long [`Subscription::stop`] lets the consumer finish the batch in hand.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// The longest pause between two attempts to store a batch (they start at 100 ms and
/// double).
const MAX_STORE_RETRY: Duration = Duration::from_secs(5);
/// The pause after the consumer reported an error.
const CONSUMER_ERROR_PAUSE: Duration = Duration::from_millis(500);
/// How often the service's subscribed addresses are read again even when every message
/// is wanted (so an address retired stops being stored).
const REFRESH_WANTED: Duration = Duration::from_secs(10);

/// The consumer group of `service`'s `kind` on `prefix`: `<prefix>.<service>.<events|commands>`.
pub(crate) fn group(prefix: &str, service: &str, kind: MessageKind) -> String {
    let plural = match kind {
        MessageKind::Event => "events",
        MessageKind::Command => "commands",
    };
    format!("{prefix}.{service}.{plural}")
}

/// Makes sure the topics of `request` exist, joins the group and starts consuming.
pub(crate) async fn subscribe(
    settings: Arc<Settings>,
    topics: Arc<Topics>,
    request: SubscribeRequest,
    sink: Arc<dyn InboxSink>,
) -> Result<KafkaSubscription, KafkaError> {
    let names: Vec<String> = match request.kind {
        MessageKind::Event => vec![settings.names.topic(MessageKind::Event, "")],
        MessageKind::Command => request
            .addresses
            .iter()
            .map(|topic| settings.names.topic(MessageKind::Command, topic))
            .collect(),
    };
    for topic in &names {
        topics.ensure(topic).await?;
    }
    let group = group(&settings.options.prefix, &request.service, request.kind);
    let (joined, mut has_joined) = watch::channel(false);
    let consumer: StreamConsumer<Joined> = settings
        .consumer(&group)
        .create_with_context(Joined { joined })
        .map_err(|source| KafkaError::Client {
            client: "consumer",
            source,
        })?;
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    consumer.subscribe(&refs).map_err(KafkaError::Consume)?;
    let (stop, stopped) = watch::channel(false);
    let wanted = (request.kind == MessageKind::Event).then(|| {
        let own: HashSet<String> = request.addresses.iter().cloned().collect();
        Wanted {
            all: own.clone(),
            own,
            refreshed_at: None,
        }
    });
    tracing::info!(
        service = %request.service,
        group = %group,
        topics = ?names,
        addresses = ?request.addresses,
        "Kafka subscription started"
    );
    let task = Consuming {
        consumer: Arc::new(consumer),
        topics: names,
        kind: request.kind,
        batch_size: request.batch_size.max(1),
        batch_wait: settings.options.batch_wait,
        sink,
        stopped,
        wanted,
        group: group.clone(),
    };
    let task = tokio::spawn(task.run());
    // The group's first assignment, before the runtime starts the workers: a process
    // consumes from the moment it is started, not after its group's join delay (nothing
    // would be lost without it, a new group reading from the oldest message kept).
    let wait = settings.options.session_timeout + settings.options.request_timeout;
    if tokio::time::timeout(wait, has_joined.wait_for(|joined| *joined))
        .await
        .is_err()
    {
        tracing::warn!(group = %group, ?wait, "the Kafka consumer group gave this process no partitions yet: it goes on, and consumes once it does");
    }
    Ok(KafkaSubscription { stop, task })
}

/// The consumer's context: tells [`subscribe`] when the group first gave this consumer
/// its partitions, and logs every assignment and revocation.
pub(crate) struct Joined {
    joined: watch::Sender<bool>,
}

impl ClientContext for Joined {
    /// librdkafka's log lines, as `tracing` events of target `librdkafka`. A commit refused
    /// during a rebalance (`COMMITFAIL`) is expected here (the new owner redelivers, the
    /// inbox drops the copies): logged at debug, not as a warning.
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        match level {
            _ if facility == "COMMITFAIL" => {
                tracing::debug!(target: "librdkafka", facility, "{message}");
            }
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", facility, "{message}");
            }
            RDKafkaLogLevel::Warning => {
                tracing::warn!(target: "librdkafka", facility, "{message}");
            }
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", facility, "{message}");
            }
            RDKafkaLogLevel::Debug => {
                tracing::debug!(target: "librdkafka", facility, "{message}");
            }
        }
    }
}

impl ConsumerContext for Joined {
    fn post_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(partitions) => {
                tracing::debug!(partitions = partitions.count(), "Kafka partitions assigned");
                let _ = self.joined.send(true);
            }
            Rebalance::Revoke(partitions) => {
                tracing::debug!(partitions = partitions.count(), "Kafka partitions revoked");
            }
            Rebalance::Error(error) => {
                tracing::warn!(%error, "a Kafka rebalance failed");
            }
        }
    }
}

/// A running subscription: its consuming task.
#[derive(Debug)]
pub(crate) struct KafkaSubscription {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

#[async_trait]
impl Subscription for KafkaSubscription {
    async fn stop(self: Box<Self>) {
        let KafkaSubscription { stop, task } = *self;
        let _ = stop.send(true);
        let abort = task.abort_handle();
        if tokio::time::timeout(STOP_GRACE, task).await.is_err() {
            tracing::warn!("the Kafka consumer did not finish its batch in time: aborted (its messages are delivered again)");
            abort.abort();
        }
    }
}

/// The event types a consumer stores: its own subscriptions, and those the database knows
/// for its service (a newer process's included).
struct Wanted {
    own: HashSet<String>,
    all: HashSet<String>,
    refreshed_at: Option<Instant>,
}

/// One message taken from the consumer.
struct Received {
    /// Its topic, as an index into the subscription's topics.
    topic: usize,
    partition: i32,
    offset: i64,
    /// The message type from its header, when it has one.
    message_type: Option<String>,
    body: Vec<u8>,
}

/// The consuming task of one subscription.
struct Consuming {
    consumer: Arc<StreamConsumer<Joined>>,
    /// The topics consumed ([`Received::topic`] is an index into them).
    topics: Vec<String>,
    kind: MessageKind,
    batch_size: usize,
    batch_wait: Duration,
    sink: Arc<dyn InboxSink>,
    stopped: watch::Receiver<bool>,
    wanted: Option<Wanted>,
    group: String,
}

impl Consuming {
    async fn run(mut self) {
        let mut last = None;
        while let Some(batch) = self.next_batch().await {
            if !self.deliver(&batch).await {
                break;
            }
            let offsets = next_offsets(&self.topics, &batch);
            if let Err(error) = self.consumer.commit(&offsets, CommitMode::Async) {
                tracing::debug!(group = %self.group, %error, "committing offsets failed: the messages are delivered again and the inbox drops them");
            }
            last = Some(offsets);
        }
        // The last commit made sure of, then the group left: both blocking calls in
        // librdkafka, off the runtime's threads.
        let consumer = self.consumer;
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(offsets) = last {
                if let Err(error) = consumer.commit(&offsets, CommitMode::Sync) {
                    tracing::debug!(%error, "the last commit at the stop failed: the messages are delivered again and the inbox drops them");
                }
            }
            drop(consumer);
        })
        .await;
    }

    /// The next batch: the first message waited for, then up to `batch_size` gathered for
    /// at most `batch_wait`. `None` once stopped.
    async fn next_batch(&mut self) -> Option<Vec<Received>> {
        let mut batch = Vec::new();
        loop {
            let first = tokio::select! {
                received = self.consumer.recv() => received,
                _ = self.stopped.wait_for(|stopped| *stopped) => return None,
            };
            match first {
                Ok(message) => {
                    batch.push(received(&self.topics, &message));
                    break;
                }
                Err(error) => {
                    tracing::warn!(group = %self.group, %error, "the Kafka consumer reported an error");
                    tokio::time::sleep(CONSUMER_ERROR_PAUSE).await;
                }
            }
        }
        let until = tokio::time::Instant::now() + self.batch_wait;
        while batch.len() < self.batch_size {
            match tokio::time::timeout_at(until, self.consumer.recv()).await {
                Ok(Ok(message)) => batch.push(received(&self.topics, &message)),
                Ok(Err(_)) | Err(_) => break,
            }
        }
        Some(batch)
    }

    /// Stores the wanted messages of `batch`, retrying until stored. `false`: stopped
    /// first (nothing is committed then).
    async fn deliver(&mut self, batch: &[Received]) -> bool {
        let mut backoff = Backoff::new(MAX_STORE_RETRY);
        loop {
            if *self.stopped.borrow() {
                return false;
            }
            let pause = match self.store(batch).await {
                Ok(()) => return true,
                Err(error) => {
                    let pause = backoff.next();
                    tracing::warn!(group = %self.group, %error, retry_in = ?pause, "storing a Kafka batch in the inbox failed: retried");
                    pause
                }
            };
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                _ = self.stopped.wait_for(|stopped| *stopped) => return false,
            }
        }
    }

    async fn store(&mut self, batch: &[Received]) -> bandeja_core::error::Result<()> {
        self.refresh_wanted(batch).await?;
        let kept: Vec<&[u8]> = batch
            .iter()
            .filter(|message| self.wants(message))
            .map(|message| message.body.as_slice())
            .collect();
        if kept.len() < batch.len() {
            tracing::trace!(group = %self.group, skipped = batch.len() - kept.len(), "messages of types this service does not consume");
        }
        if !kept.is_empty() {
            self.sink.accept(self.kind, &kept).await?;
        }
        Ok(())
    }

    /// A message without a type header is stored (the inbox decides what it is).
    fn wants(&self, message: &Received) -> bool {
        match (&self.wanted, &message.message_type) {
            (Some(wanted), Some(message_type)) => wanted.all.contains(message_type),
            _ => true,
        }
    }

    /// Reads the service's subscribed addresses again when the batch has a type not known
    /// to be wanted, or every [`REFRESH_WANTED`]: another process of the service, of a
    /// newer version, may subscribe to types this one does not.
    async fn refresh_wanted(&mut self, batch: &[Received]) -> bandeja_core::error::Result<()> {
        let Some(wanted) = &self.wanted else {
            return Ok(());
        };
        let stale = wanted
            .refreshed_at
            .is_none_or(|at| at.elapsed() >= REFRESH_WANTED);
        if !stale && batch.iter().all(|message| self.wants(message)) {
            return Ok(());
        }
        let addresses = self.sink.addresses(self.kind).await?;
        if let Some(wanted) = &mut self.wanted {
            if let Some(addresses) = addresses {
                wanted.all = wanted.own.iter().cloned().chain(addresses).collect();
            }
            wanted.refreshed_at = Some(Instant::now());
        }
        Ok(())
    }
}

/// The offsets to commit after `batch` was stored: for each of its partitions, the one
/// after its last message.
fn next_offsets(topics: &[String], batch: &[Received]) -> TopicPartitionList {
    let mut next: BTreeMap<(usize, i32), i64> = BTreeMap::new();
    for message in batch {
        let offset = next.entry((message.topic, message.partition)).or_default();
        *offset = (*offset).max(message.offset + 1);
    }
    let mut offsets = TopicPartitionList::with_capacity(next.len());
    for ((topic, partition), offset) in next {
        if let Some(topic) = topics.get(topic) {
            let _ = offsets.add_partition_offset(topic, partition, Offset::Offset(offset));
        }
    }
    offsets
}

/// What the task keeps of a message (the consumer's borrowed one must be let go).
fn received(topics: &[String], message: &rdkafka::message::BorrowedMessage<'_>) -> Received {
    let message_type = message.headers().and_then(|headers| {
        headers
            .iter()
            .find(|header| header.key == TYPE_HEADER)
            .and_then(|header| header.value)
            .and_then(|value| std::str::from_utf8(value).ok())
            .map(str::to_owned)
    });
    Received {
        // The consumer subscribed to these topics only; an unknown one (never) counts as
        // the first.
        topic: topics
            .iter()
            .position(|topic| topic == message.topic())
            .unwrap_or_default(),
        partition: message.partition(),
        offset: message.offset(),
        message_type,
        body: message.payload().unwrap_or_default().to_vec(),
    }
}
