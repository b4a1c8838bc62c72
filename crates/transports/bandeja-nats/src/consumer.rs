//! The durable pull consumer of one partition: its configuration, and opening it so that
//! no message is stored after a later one of its partition.
//!
//! JetStream delivers a partition's messages in stream order, but a delivery can be lost
//! (a pull whose answer never arrived: a broker restart, a dropped connection, a process
//! killed with a batch in hand). A lost delivery stays outstanding until `ack_wait` runs
//! out, and meanwhile the consumer hands out the *next* messages: storing those first
//! would reorder a key. So a consumer is opened by [`open`]: when deliveries are
//! outstanding that no batch of this process holds, it is *rewound*: deleted and created
//! again from the first message not yet acknowledged (its acknowledgement floor, below
//! which every message is stored). Everything after the floor is delivered again in
//! stream order; what was already stored is a copy the inbox drops.
//!
//! Each creation writes a fresh *incarnation* into the consumer's description (an update
//! keeps it): a process holding a batch tells by it that another process rewound the
//! consumer meanwhile (the server's `created` time is no use: it changes on a restart).

use std::time::Duration;

use async_nats::jetstream::consumer::{pull, AckPolicy, DeliverPolicy, PullConsumer};
use async_nats::jetstream::stream::{self, ConsumerErrorKind};
use async_nats::jetstream::{Context, ErrorCode};

use crate::error::NatsError;
use crate::streams;

/// Pull requests a partition's consumer serves at once: one, so that the service's
/// processes take turns and each batch is a contiguous run of deliveries, which
/// [`crate::order`] needs to tell which batch is the oldest.
pub(crate) const MAX_WAITING: i64 = 1;

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
        max_waiting: MAX_WAITING,
        deliver_policy: DeliverPolicy::All,
        max_deliver: -1,
        ..Default::default()
    }
}

/// What opening a consumer did, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opened {
    /// It did not exist: created.
    Created,
    /// It existed with nothing outstanding: updated to this configuration.
    Kept,
    /// Deliveries were outstanding, or a setting the server cannot update changed: created
    /// again from this stream sequence.
    Rewound { from: u64 },
}

/// What precedes the incarnation in a consumer's description.
const INCARNATION_MARK: &str = "bandeja incarnation ";

/// The incarnation a consumer was created with (`None` for one an older version created).
pub(crate) fn incarnation(consumer: &PullConsumer) -> Option<String> {
    incarnation_of(consumer.cached_info().config.description.as_deref())
}

/// The incarnation in a consumer description.
pub(crate) fn incarnation_of(description: Option<&str>) -> Option<String> {
    description?
        .strip_prefix(INCARNATION_MARK)
        .map(str::to_owned)
}

/// A description with a fresh incarnation.
fn fresh_description() -> String {
    format!("{INCARNATION_MARK}{}", uuid::Uuid::new_v4().simple())
}

/// One partition's durable consumer on its stream.
pub(crate) struct Durable<'a> {
    pub(crate) jetstream: &'a Context,
    pub(crate) stream: &'a stream::Config,
    pub(crate) config: &'a pull::Config,
}

impl Durable<'_> {
    fn name(&self) -> &str {
        self.config.durable_name.as_deref().unwrap_or("")
    }

    fn error(&self, source: stream::ConsumerError) -> NatsError {
        NatsError::Consumer {
            stream: self.stream.name.clone(),
            consumer: self.name().to_owned(),
            source,
        }
    }

    /// Opens the consumer: creates it, updates it, or rewinds it (see the module doc).
    pub(crate) async fn open(&self) -> Result<(PullConsumer, Opened), NatsError> {
        let existing = self
            .jetstream
            .get_consumer_from_stream::<pull::Config, _, _>(self.name(), &self.stream.name)
            .await;
        let existing = match existing {
            Ok(existing) => existing,
            Err(error) if not_found(&error) => {
                let mut config = self.config.clone();
                config.description = Some(fresh_description());
                return Ok((self.create(config).await?, Opened::Created));
            }
            Err(error) => return Err(self.error(error)),
        };
        let info = existing.cached_info();
        if info.num_ack_pending == 0 && !needs_recreating(&info.config, self.config) {
            // The start position and the incarnation are kept from the existing consumer.
            let mut config = self.config.clone();
            config.deliver_policy = info.config.deliver_policy;
            config.description.clone_from(&info.config.description);
            return Ok((self.create(config).await?, Opened::Kept));
        }
        let from = info.ack_floor.stream_sequence.saturating_add(1);
        Ok((self.rewind(from).await?, Opened::Rewound { from }))
    }

    /// Deletes the consumer and creates it again, delivering from stream sequence `from`.
    async fn rewind(&self, from: u64) -> Result<PullConsumer, NatsError> {
        match self
            .jetstream
            .delete_consumer_from_stream(self.name(), &self.stream.name)
            .await
        {
            Ok(_) => {}
            // Another process of the service rewound it first: create it again all the same.
            Err(error) if not_found(&error) => {}
            Err(error) => return Err(self.error(error)),
        }
        let mut config = self.config.clone();
        config.deliver_policy = DeliverPolicy::ByStartSequence {
            start_sequence: from,
        };
        config.description = Some(fresh_description());
        self.create(config).await
    }

    /// Creates (or updates) the consumer, declaring the stream again first when a server
    /// restarted without its store.
    async fn create(&self, config: pull::Config) -> Result<PullConsumer, NatsError> {
        let create = || {
            self.jetstream
                .create_consumer_on_stream(config.clone(), self.stream.name.as_str())
        };
        let result = match create().await {
            Err(error) if stream_missing(&error) => {
                streams::declare(self.jetstream, self.stream.clone()).await?;
                create().await
            }
            result => result,
        };
        result.map_err(|source| self.error(source))
    }
}

/// Whether an existing consumer differs from `wanted` in a setting JetStream does not let
/// an update change (its start position aside, which is kept).
fn needs_recreating(
    existing: &async_nats::jetstream::consumer::Config,
    wanted: &pull::Config,
) -> bool {
    existing.max_waiting != wanted.max_waiting || existing.ack_policy != wanted.ack_policy
}

/// Whether a consumer request failed because the consumer (or its stream) does not exist.
fn not_found(error: &stream::ConsumerError) -> bool {
    matches!(error.kind(), ConsumerErrorKind::JetStream(e)
        if e.error_code() == ErrorCode::CONSUMER_NOT_FOUND || e.error_code() == ErrorCode::STREAM_NOT_FOUND)
}

/// Whether creating a consumer failed because its stream does not exist.
fn stream_missing(error: &stream::ConsumerError) -> bool {
    matches!(error.kind(), ConsumerErrorKind::JetStream(e) if e.error_code() == ErrorCode::STREAM_NOT_FOUND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumers_ack_explicitly_take_a_batch_at_a_time_and_serve_one_pull() {
        let config = consumer_config(
            "inventory_events_p0".into(),
            "b.events.p0.>".into(),
            Duration::from_secs(2),
            50,
        );
        assert_eq!(config.max_ack_pending, 50);
        assert_eq!(config.max_waiting, 1);
        assert_eq!(config.ack_policy, AckPolicy::Explicit);
        assert_eq!(config.deliver_policy, DeliverPolicy::All);
        assert_eq!(config.max_deliver, -1);
        assert_eq!(config.durable_name.as_deref(), Some("inventory_events_p0"));
    }

    #[test]
    fn an_incarnation_is_read_back_from_the_description_it_was_written_to() {
        let description = fresh_description();
        let incarnation = incarnation_of(Some(&description)).expect("an incarnation");
        assert_eq!(incarnation.len(), 32);
        assert_ne!(
            incarnation_of(Some(&fresh_description())),
            Some(incarnation)
        );
        assert_eq!(incarnation_of(Some("made by hand")), None);
        assert_eq!(incarnation_of(None), None);
    }

    #[test]
    fn a_consumer_of_an_older_version_is_recreated_but_not_for_its_start_position() {
        let wanted = consumer_config(
            "c".into(),
            "b.events.p0.>".into(),
            Duration::from_secs(2),
            50,
        );
        let mut existing = async_nats::jetstream::consumer::Config {
            durable_name: Some("c".into()),
            ack_policy: AckPolicy::Explicit,
            max_waiting: 512,
            ..Default::default()
        };
        assert!(
            needs_recreating(&existing, &wanted),
            "max_waiting cannot be updated"
        );
        existing.max_waiting = 1;
        existing.deliver_policy = DeliverPolicy::ByStartSequence { start_sequence: 7 };
        assert!(!needs_recreating(&existing, &wanted));
    }
}
