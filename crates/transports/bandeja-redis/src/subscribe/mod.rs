//! The receiving side: the service's consumer group on every stream it consumes (created
//! idempotently), one consumer per subscription, one task per stream that stores batches
//! in the inbox and acknowledges them only once stored, and the hand-back at a stop.

mod consume;
mod deliver;
mod group;
mod order;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bandeja_core::reception::InboxSink;
use bandeja_core::record::MessageKind;
use bandeja_core::transport::routing::token;
use bandeja_core::transport::{SubscribeRequest, Subscription};
use redis::aio::MultiplexedConnection;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::connection::{Link, Settings};
use crate::error::RedisError;
use crate::names::{self, plural};
use consume::StreamConsumer;
use deliver::Wanted;
pub(crate) use group::GroupStream;

/// How long [`Subscription::stop`] lets the tasks finish the batch in hand.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A consumer with nothing pending, idle this long, belongs to a process that is gone:
/// it is deleted when another subscription of its service starts.
const PRUNE_IDLE: Duration = Duration::from_secs(60 * 60);

/// Creates the service's group on every stream of `request` and starts one consumer task
/// per stream. Returns only once every group exists: `Bandeja::start` starts the outbox
/// workers after that (and a group created later would deliver the stream from its start
/// anyway).
pub(crate) async fn subscribe(
    settings: Arc<Settings>,
    link: Arc<Link>,
    request: SubscribeRequest,
    sink: Arc<dyn InboxSink>,
) -> Result<RedisSubscription, RedisError> {
    let consumer = names::consumer(&request.service);
    let streams = streams(&settings, &request, &consumer);
    let lease = link.get().await?;
    let mut connection = lease.connection.clone();
    for stream in &streams {
        if let Err(error) = stream.create(&settings, &mut connection).await {
            if error.breaks_connection() {
                link.broken(&lease).await;
            }
            return Err(error);
        }
    }
    prune(&settings, &mut connection, &streams).await;
    let (stop, stopped) = watch::channel(false);
    let own: Arc<HashSet<String>> = Arc::new(request.addresses.iter().cloned().collect());
    let role = format!("{}:{}", token(&request.service), plural(request.kind));
    let mut tasks = JoinSet::new();
    for stream in &streams {
        let wanted = (request.kind == MessageKind::Event).then(|| Wanted::new(own.clone()));
        let task = StreamConsumer::new(
            settings.clone(),
            stream.clone(),
            role.clone(),
            request.kind,
            request.batch_size,
            sink.clone(),
            stopped.clone(),
            wanted,
        );
        tasks.spawn(task.run());
    }
    tracing::info!(
        service = %request.service,
        kind = plural(request.kind),
        consumer = %consumer,
        streams = streams.len(),
        addresses = ?request.addresses,
        "Redis subscription started"
    );
    Ok(RedisSubscription {
        stop,
        tasks,
        settings,
        link,
        streams,
    })
}

/// The streams a request consumes: a kind's partitions (events), or each topic's
/// partitions (commands).
fn streams(settings: &Settings, request: &SubscribeRequest, consumer: &str) -> Vec<GroupStream> {
    let partitions = 0..settings.options.partitions;
    let keys: Vec<String> = match request.kind {
        MessageKind::Event => partitions
            .map(|p| settings.names.stream(MessageKind::Event, "", p))
            .collect(),
        MessageKind::Command => request
            .addresses
            .iter()
            .flat_map(|topic| {
                partitions
                    .clone()
                    .map(|p| settings.names.stream(MessageKind::Command, topic, p))
            })
            .collect(),
    };
    keys.into_iter()
        .map(|key| GroupStream {
            key,
            group: request.service.clone(),
            consumer: consumer.to_owned(),
        })
        .collect()
}

/// Deletes the consumers of processes that are gone (nothing pending, idle for
/// [`PRUNE_IDLE`]); best effort.
async fn prune(
    settings: &Settings,
    connection: &mut MultiplexedConnection,
    streams: &[GroupStream],
) {
    for stream in streams {
        let consumers = match stream.consumers(settings, connection).await {
            Ok(consumers) => consumers,
            Err(error) => {
                tracing::debug!(stream = %stream.key, %error, "listing the group's consumers failed");
                return;
            }
        };
        let idle = i64::try_from(PRUNE_IDLE.as_millis()).unwrap_or(i64::MAX);
        for gone in consumers
            .iter()
            .filter(|c| c.pending == 0 && c.idle >= idle && c.name != stream.consumer)
        {
            if let Err(error) = stream
                .delete_consumer(settings, connection, &gone.name)
                .await
            {
                tracing::debug!(stream = %stream.key, consumer = %gone.name, %error, "deleting a consumer that is gone failed");
            }
        }
    }
}

/// A running subscription: its stream tasks.
#[derive(Debug)]
pub(crate) struct RedisSubscription {
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
    settings: Arc<Settings>,
    link: Arc<Link>,
    streams: Vec<GroupStream>,
}

#[async_trait]
impl Subscription for RedisSubscription {
    async fn stop(self: Box<Self>) {
        let RedisSubscription {
            stop,
            mut tasks,
            settings,
            link,
            streams,
        } = *self;
        let _ = stop.send(true);
        let finished = tokio::time::timeout(STOP_GRACE, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if finished.is_err() {
            tracing::warn!(
                tasks = tasks.len(),
                "Redis consumers did not finish their batch in time: aborted (their entries are handed back)"
            );
            tasks.shutdown().await;
        }
        hand_back(&settings, &link, &streams).await;
    }
}

/// Makes what this subscription's consumer still has pending claimable at once by the
/// service's other processes (instead of after `claim_idle`), and deletes the consumer
/// where nothing is left with it.
async fn hand_back(settings: &Settings, link: &Link, streams: &[GroupStream]) {
    let lease = match link.get().await {
        Ok(lease) => lease,
        Err(error) => {
            tracing::warn!(%error, "cannot hand back pending entries: other processes take them over after `claim_idle`");
            return;
        }
    };
    let mut connection = lease.connection.clone();
    let mut handed = 0;
    for stream in streams {
        match stream.hand_back(settings, &mut connection).await {
            Ok(count) => handed += count,
            Err(error) => {
                tracing::warn!(stream = %stream.key, %error, "cannot hand back pending entries: other processes take them over after `claim_idle`");
                if error.breaks_connection() {
                    link.broken(&lease).await;
                    return;
                }
            }
        }
    }
    if handed > 0 {
        tracing::info!(
            entries = handed,
            "handed back entries not stored before the stop"
        );
    }
}
