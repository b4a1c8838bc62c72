//! What every part of a transport shares: the checked options, the names, and the
//! librdkafka configuration of each kind of client.

use rdkafka::ClientConfig;

use crate::error::KafkaError;
use crate::names::Names;
use crate::options::{millis, KafkaOptions};

/// The options (checked) and the names of one transport.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) options: KafkaOptions,
    pub(crate) names: Names,
}

impl Settings {
    pub(crate) fn new(options: KafkaOptions) -> Result<Settings, KafkaError> {
        options.validate()?;
        let names = Names::new(&options.prefix);
        Ok(Settings { options, names })
    }

    /// The settings every client takes: the brokers and the user's own.
    fn common(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        for (key, value) in &self.options.client_config {
            config.set(key, value);
        }
        config
            .set("bootstrap.servers", &self.options.bootstrap_servers)
            .set(
                "socket.connection.setup.timeout.ms",
                millis(self.options.request_timeout),
            )
            // A metadata request creates a missing topic only when asked to: otherwise a
            // broker with `auto.create.topics.enable` would create it with its own
            // partition count.
            .set(
                "allow.auto.create.topics",
                if self.options.broker_creates_topics {
                    "true"
                } else {
                    "false"
                },
            );
        config
    }

    /// The producer's: idempotent (no duplicate and no reordering on the brokers' side
    /// when librdkafka retries), every in-sync replica acknowledging.
    pub(crate) fn producer(&self) -> ClientConfig {
        let mut config = self.common();
        config
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("max.in.flight.requests.per.connection", "5")
            .set("message.timeout.ms", millis(self.options.message_timeout))
            .set("linger.ms", "1");
        config
    }

    /// A consumer of `group`: offsets committed by this transport only (after the inbox
    /// stored what they cover), a new group starting at the oldest message kept.
    pub(crate) fn consumer(&self, group: &str) -> ClientConfig {
        let mut config = self.common();
        config
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            .set("isolation.level", "read_committed")
            .set("session.timeout.ms", millis(self.options.session_timeout))
            .set(
                "heartbeat.interval.ms",
                millis(self.options.session_timeout / 4),
            )
            .set("fetch.wait.max.ms", millis(self.options.fetch_wait))
            .set("enable.partition.eof", "false")
            // Longer than the longest the store may take to accept a batch that it keeps
            // refusing (retried every 5 s at most) before a rebalance is waited for.
            .set("max.poll.interval.ms", "300000");
        config
    }

    /// The admin client's (topics and metadata).
    pub(crate) fn admin(&self) -> ClientConfig {
        self.common()
    }
}
