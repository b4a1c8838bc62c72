//! The durable pull consumer of one partition: its configuration, and opening it so that
//! no message is stored after a later one of its partition.
//!
//! JetStream delivers a partition's messages in stream order, but a delivery can be lost
//! (a pull whose answer never arrived: a broker restart, a dropped connection, a process
//! killed with a batch in hand). A lost delivery stays outstanding until `ack_wait` runs
//! out, and meanwhile the consumer hands out the *next* messages: storing those first
//! would reorder a key. So a consumer is opened by [`Durable::open`]: when deliveries are
//! outstanding and its acknowledgement floor (below which every message is stored) does
//! not move for [`QUIET`], it is *rewound*: replaced by a new consumer that starts from
//! the first message not acknowledged. Everything after the floor is delivered again in
//! stream order; what was already stored is a copy the inbox drops.
//!
//! A partition's consumer is therefore a series of *generations*, named
//! `<base>_g<N>` (`<base>` alone for the one an older version created). The newest is
//! the partition's; a rewind creates the next before it deletes the older ones, so there
//! is always one to pull from, and a deleted generation's name is never used again: a
//! batch, an acknowledgement or a delivery number of an older generation cannot be
//! mistaken for the newest's (JetStream routes acknowledgements by consumer name).
//! Two generations alive at once (two processes creating one at the same time: after
//! creating, each reads the listing again and the one not newest deletes its own) keep the
//! order too meanwhile: each starts at or below the first message not stored and stores in
//! order, so the first copy of every message is stored after the messages before it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::consumer::{pull, AckPolicy, DeliverPolicy, PullConsumer};
use async_nats::jetstream::stream::{self, ConsumerErrorKind};
use async_nats::jetstream::{Context, ErrorCode};
use futures::TryStreamExt;

use crate::error::NatsError;
use crate::streams;

/// Pull requests a partition's consumer serves at once: one, so that the service's
/// processes take turns and each batch is a contiguous run of deliveries, which
/// [`crate::order`] needs to tell which batch is the oldest.
pub(crate) const MAX_WAITING: i64 = 1;

/// How long opening a consumer with deliveries outstanding waits for its acknowledgement
/// floor to move (another process storing its batch) before it rewinds the consumer.
pub(crate) const QUIET: Duration = Duration::from_secs(2);
/// How often it looks meanwhile.
const QUIET_POLL: Duration = Duration::from_millis(100);

/// What marks a generation in a consumer name.
const GENERATION_MARK: &str = "_g";

/// The configuration of a service's durable pull consumer on one partition; its name is
/// the partition's base name (a generation is named after it).
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Opened {
    /// The partition had none: created (delivering from the oldest message kept).
    Created,
    /// The newest generation, as it was.
    Kept,
    /// Replaced by a new generation delivering from stream sequence `from`.
    Rewound {
        /// The generation replaced.
        replaced: String,
        /// The first stream sequence the new one delivers.
        from: u64,
    },
}

/// The generation of `name` among `base`'s consumers: 0 for `base` itself.
pub(crate) fn generation(base: &str, name: &str) -> Option<u64> {
    if name == base {
        return Some(0);
    }
    let digits = name.strip_prefix(base)?.strip_prefix(GENERATION_MARK)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A generation number above `newest`: the time in milliseconds (so that a name is not
/// used again even after every generation was deleted), or `newest + 1`.
fn next_generation(newest: Option<u64>) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    match newest {
        Some(newest) => now.max(newest.saturating_add(1)),
        None => now,
    }
}

/// One partition's durable consumer on its stream.
pub(crate) struct Durable<'a> {
    pub(crate) jetstream: &'a Context,
    pub(crate) stream: &'a stream::Config,
    pub(crate) config: &'a pull::Config,
}

impl Durable<'_> {
    /// The partition's base name.
    fn base(&self) -> &str {
        self.config.durable_name.as_deref().unwrap_or("")
    }

    fn error(&self, consumer: &str, source: stream::ConsumerError) -> NatsError {
        NatsError::Consumer {
            stream: self.stream.name.clone(),
            consumer: consumer.to_owned(),
            source,
        }
    }

    /// The partition's generations on the stream, oldest first.
    async fn generations(&self) -> Result<Vec<(u64, String)>, NatsError> {
        let names = match self.consumer_names().await {
            Ok(names) => names,
            Err(_) => {
                // Perhaps a server that restarted without its store: the stream is declared
                // again (a no-op when it exists), and the listing tried once more.
                streams::declare(self.jetstream, self.stream.clone()).await?;
                self.consumer_names()
                    .await
                    .map_err(|source| NatsError::Consumers {
                        stream: self.stream.name.clone(),
                        source,
                    })?
            }
        };
        let mut generations: Vec<(u64, String)> = names
            .into_iter()
            .filter_map(|name| generation(self.base(), &name).map(|g| (g, name)))
            .collect();
        generations.sort();
        Ok(generations)
    }

    /// The names of every consumer of the stream.
    async fn consumer_names(&self) -> Result<Vec<String>, async_nats::Error> {
        let stream = self.jetstream.get_stream_no_info(&self.stream.name).await?;
        Ok(stream.consumer_names().try_collect().await?)
    }

    /// Opens the partition's newest generation: creates the first, keeps it, or rewinds it
    /// (see the module doc). A consumer is only ever created under a fresh name: a change
    /// of its settings is a rewind too, since updating a name that another process deletes
    /// meanwhile would create it again (the server's create and update are one request).
    /// [`NatsError::Superseded`] when another process replaced it meanwhile: open again.
    pub(crate) async fn open(&self) -> Result<(PullConsumer, Opened), NatsError> {
        let generations = self.generations().await?;
        let Some((newest, current)) = generations.last().cloned() else {
            let name = self.name_of(next_generation(None));
            let consumer = self.create(&name, DeliverPolicy::All).await?;
            self.settle(&name).await?;
            return Ok((consumer, Opened::Created));
        };
        let existing: PullConsumer = match self
            .jetstream
            .get_consumer_from_stream(&current, &self.stream.name)
            .await
        {
            Ok(existing) => existing,
            Err(error) if not_found(&error) => {
                return Err(NatsError::Superseded { consumer: current })
            }
            Err(error) => return Err(self.error(&current, error)),
        };
        let info = existing.cached_info().clone();
        let rewind = if needs_recreating(&info.config, self.config)
            || needs_updating(&info.config, self.config)
        {
            true
        } else if info.num_ack_pending > 0 {
            match self.floor_moves(&existing, &info).await {
                Floor::Moves => false,
                Floor::Still => true,
                Floor::Gone => return Err(NatsError::Superseded { consumer: current }),
            }
        } else {
            false
        };
        if !rewind {
            // Leftovers of a rewind that stopped half-way.
            self.delete_all(&generations[..generations.len() - 1]).await;
            return Ok((existing, Opened::Kept));
        }
        let from = info.ack_floor.stream_sequence.saturating_add(1);
        let name = self.name_of(next_generation(Some(newest)));
        let consumer = self
            .create(
                &name,
                DeliverPolicy::ByStartSequence {
                    start_sequence: from,
                },
            )
            .await?;
        self.settle(&name).await?;
        Ok((
            consumer,
            Opened::Rewound {
                replaced: current,
                from,
            },
        ))
    }

    /// After creating the generation `name`: deletes every other when it is the newest;
    /// otherwise (another process created a newer one at the same time) deletes it and
    /// answers [`NatsError::Superseded`], so that every process ends on the newest.
    async fn settle(&self, name: &str) -> Result<(), NatsError> {
        let generations = self.generations().await?;
        let newest = generations.last().map(|(_, newest)| newest.as_str());
        if newest == Some(name) {
            self.delete_all(&generations[..generations.len() - 1]).await;
            return Ok(());
        }
        self.delete_all(&[(0, name.to_owned())]).await;
        Err(NatsError::Superseded {
            consumer: name.to_owned(),
        })
    }

    /// Whether the acknowledgement floor moves (or nothing is outstanding any more) within
    /// [`QUIET`]: another process is storing what is outstanding.
    async fn floor_moves(
        &self,
        consumer: &PullConsumer,
        first: &async_nats::jetstream::consumer::Info,
    ) -> Floor {
        let until = tokio::time::Instant::now() + QUIET;
        while tokio::time::Instant::now() < until {
            tokio::time::sleep(QUIET_POLL).await;
            match consumer.get_info().await {
                Ok(now)
                    if now.num_ack_pending == 0
                        || now.ack_floor.stream_sequence > first.ack_floor.stream_sequence =>
                {
                    return Floor::Moves
                }
                Ok(_) => {}
                // Deleted (replaced by another process), or the server is away: the listing
                // is read again rather than a generation created on a guess.
                Err(_) => return Floor::Gone,
            }
        }
        Floor::Still
    }

    /// Deletes `generations` (errors only logged: a generation already deleted by another
    /// process is what was wanted, and a leftover is deleted by the next opening).
    async fn delete_all(&self, generations: &[(u64, String)]) {
        for (_, name) in generations {
            if let Err(error) = self
                .jetstream
                .delete_consumer_from_stream(name, &self.stream.name)
                .await
            {
                if !not_found(&error) {
                    tracing::debug!(consumer = %name, %error, "deleting an older generation failed");
                }
            }
        }
    }

    fn name_of(&self, generation: u64) -> String {
        format!("{}{GENERATION_MARK}{generation}", self.base())
    }

    /// Creates the generation `name` (a fresh name: never an update) delivering by
    /// `deliver_policy`, declaring the stream again first when a server restarted without
    /// its store.
    async fn create(
        &self,
        name: &str,
        deliver_policy: DeliverPolicy,
    ) -> Result<PullConsumer, NatsError> {
        let mut config = self.config.clone();
        config.durable_name = Some(name.to_owned());
        config.deliver_policy = deliver_policy;
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
        result.map_err(|source| self.error(name, source))
    }
}

/// What a consumer's acknowledgement floor did while it was watched.
enum Floor {
    /// It moved, or nothing is outstanding any more.
    Moves,
    /// It stayed where it was.
    Still,
    /// The consumer could not be read (deleted, or the server away).
    Gone,
}

/// Whether an existing consumer differs from `wanted` in a setting an update changes.
fn needs_updating(
    existing: &async_nats::jetstream::consumer::Config,
    wanted: &pull::Config,
) -> bool {
    existing.ack_wait != wanted.ack_wait
        || existing.max_ack_pending != wanted.max_ack_pending
        || existing.max_deliver != wanted.max_deliver
        || existing.filter_subject != wanted.filter_subject
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
    fn generations_are_read_from_names_of_this_partition_only() {
        let base = "inventory_events_p1";
        assert_eq!(generation(base, "inventory_events_p1"), Some(0));
        assert_eq!(
            generation(base, "inventory_events_p1_g1764600000000"),
            Some(1_764_600_000_000)
        );
        assert_eq!(generation(base, "inventory_events_p10"), None);
        assert_eq!(generation(base, "inventory_events_p10_g5"), None);
        assert_eq!(generation(base, "inventory_events_p1_g"), None);
        assert_eq!(generation(base, "inventory_events_p1_gx"), None);
        assert_eq!(generation(base, "billing_events_p1_g5"), None);
        assert_eq!(
            generation(base, "inventory_events_p1_g99999999999999999999999"),
            None
        );
    }

    #[test]
    fn a_new_generation_is_above_the_newest_even_with_a_clock_behind() {
        let now = next_generation(None);
        assert!(next_generation(Some(5)) >= now);
        assert_eq!(next_generation(Some(u64::MAX - 1)), u64::MAX);
        let ahead = now + 1_000_000;
        assert_eq!(next_generation(Some(ahead)), ahead + 1);
    }

    /// What a process of these tests wants, and the consumer a server holds for it.
    fn wanted_and_existing() -> (pull::Config, async_nats::jetstream::consumer::Config) {
        let wanted = consumer_config(
            "c".into(),
            "b.events.p0.>".into(),
            Duration::from_secs(2),
            50,
        );
        let existing = async_nats::jetstream::consumer::Config {
            durable_name: Some("c_g7".into()),
            filter_subject: "b.events.p0.>".into(),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_secs(2),
            max_ack_pending: 50,
            max_waiting: 1,
            max_deliver: -1,
            deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: 7 },
            ..Default::default()
        };
        (wanted, existing)
    }

    #[test]
    fn a_changed_setting_calls_for_a_new_generation_but_a_start_position_does_not() {
        let (wanted, mut existing) = wanted_and_existing();
        assert!(!needs_recreating(&existing, &wanted) && !needs_updating(&existing, &wanted));
        existing.ack_wait = Duration::from_secs(30);
        assert!(needs_updating(&existing, &wanted));
        let (_, mut older_version) = wanted_and_existing();
        older_version.max_waiting = 512;
        assert!(
            needs_recreating(&older_version, &wanted),
            "max_waiting cannot be updated"
        );
    }
}
