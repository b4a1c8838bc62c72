//! What [`KafkaTransport::connect`](crate::KafkaTransport::connect) needs: the brokers, the
//! names, the partition count and replication, and the timings of producing and consuming.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::KafkaError;

/// The options of a [`KafkaTransport`](crate::KafkaTransport). Build them with [`Default`]
/// (or [`KafkaOptions::new`]) and the setters; each setter states its default.
///
/// Every process of one system must agree on `prefix` and `partitions` (publishers route
/// by them, consumers read by them); `connect` refuses a process whose partition count
/// differs from the one the topics have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaOptions {
    /// The brokers to bootstrap from (`host:port[,host:port…]`). Default `127.0.0.1:9092`.
    pub bootstrap_servers: String,
    /// The first part of every topic name (`<prefix>.events`…): the services of one system
    /// share it. ASCII letters, digits, `.`, `_` and `-`, 1 to 100 bytes. Default `bandeja`.
    pub prefix: String,
    /// How many partitions each topic has (created with this count; an existing topic with
    /// another count is an error at start). 1 to 10,000. Default 8.
    pub partitions: u16,
    /// The replication factor of the topics this transport creates; `-1` leaves it to the
    /// brokers' `default.replication.factor`. Default -1.
    pub replication_factor: i32,
    /// Whether `connect` and `subscribe` create the topics they need (idempotently, with
    /// `CreateTopics`). When off, a missing topic is an error at start. Default on.
    pub create_topics: bool,
    /// Whether a metadata request asks the brokers to create a missing topic
    /// (`allow.auto.create.topics`, with the brokers' own partition count), for brokers
    /// that create topics that way and do not answer `CreateTopics` (librdkafka's mock
    /// cluster). Off, a topic neither this transport nor an operator created stays
    /// missing. Default off.
    pub broker_creates_topics: bool,
    /// How long a message may wait in the producer for its delivery report
    /// (`message.timeout.ms`); the dispatcher's deadline, shorter, decides when a row goes
    /// back to PENDING. At least 1 s. Default 30 s.
    pub message_timeout: Duration,
    /// How long the consumer gathers a batch after its first message before storing it.
    /// At most 1 s. Default 5 ms.
    pub batch_wait: Duration,
    /// How long a fetch may wait on the brokers for new messages (`fetch.wait.max.ms`).
    /// Brokers answer as soon as a message arrives, so this only bounds an idle fetch
    /// (librdkafka's mock cluster answers only when it runs out: there it is the
    /// latency). 1 ms to 10 s. Default 100 ms.
    pub fetch_wait: Duration,
    /// The consumer group session timeout (`session.timeout.ms`): how long a process that
    /// died keeps its partitions before the group hands them to the others. 6 s (the
    /// brokers' default minimum) to 5 min.
    /// Default 10 s.
    pub session_timeout: Duration,
    /// How long connecting and the topic and metadata requests may take. Default 10 s.
    pub request_timeout: Duration,
    /// Other librdkafka settings for every client (`security.protocol`, `sasl.*`, `ssl.*`,
    /// `client.id`…). The settings this transport's guarantees rest on
    /// (`enable.idempotence`, `acks`, `enable.auto.commit`, …) cannot be overridden.
    pub client_config: BTreeMap<String, String>,
}

/// The default brokers.
pub const DEFAULT_BOOTSTRAP_SERVERS: &str = "127.0.0.1:9092";

/// The longest prefix accepted.
const MAX_PREFIX_BYTES: usize = 100;

/// The librdkafka settings this transport sets itself.
pub(crate) const RESERVED_SETTINGS: [&str; 15] = [
    "bootstrap.servers",
    "enable.idempotence",
    "acks",
    "message.timeout.ms",
    "group.id",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "auto.offset.reset",
    "session.timeout.ms",
    "allow.auto.create.topics",
    "isolation.level",
    "max.in.flight.requests.per.connection",
    "fetch.wait.max.ms",
    "transactional.id",
    "max.poll.interval.ms",
];

impl Default for KafkaOptions {
    fn default() -> Self {
        KafkaOptions {
            bootstrap_servers: DEFAULT_BOOTSTRAP_SERVERS.to_owned(),
            prefix: "bandeja".to_owned(),
            partitions: 8,
            replication_factor: -1,
            create_topics: true,
            broker_creates_topics: false,
            message_timeout: Duration::from_secs(30),
            batch_wait: Duration::from_millis(5),
            fetch_wait: Duration::from_millis(100),
            session_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(10),
            client_config: BTreeMap::new(),
        }
    }
}

impl KafkaOptions {
    /// The defaults with `bootstrap_servers`.
    pub fn new(bootstrap_servers: impl Into<String>) -> Self {
        KafkaOptions::default().bootstrap_servers(bootstrap_servers)
    }

    /// The brokers to bootstrap from. Default `127.0.0.1:9092`.
    #[must_use]
    pub fn bootstrap_servers(mut self, servers: impl Into<String>) -> Self {
        self.bootstrap_servers = servers.into();
        self
    }

    /// The prefix of every topic. Default `bandeja`.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The partition count of every topic. Default 8.
    #[must_use]
    pub fn partitions(mut self, partitions: u16) -> Self {
        self.partitions = partitions;
        self
    }

    /// The replication factor of created topics (`-1`: the brokers' default). Default -1.
    #[must_use]
    pub fn replication_factor(mut self, factor: i32) -> Self {
        self.replication_factor = factor;
        self
    }

    /// Whether missing topics are created. Default on.
    #[must_use]
    pub fn create_topics(mut self, create: bool) -> Self {
        self.create_topics = create;
        self
    }

    /// Whether the brokers create a missing topic when its metadata is asked for. Default
    /// off.
    #[must_use]
    pub fn broker_creates_topics(mut self, create: bool) -> Self {
        self.broker_creates_topics = create;
        self
    }

    /// How long a message may wait for its delivery report. Default 30 s.
    #[must_use]
    pub fn message_timeout(mut self, timeout: Duration) -> Self {
        self.message_timeout = timeout;
        self
    }

    /// How long a batch is gathered after its first message. Default 5 ms.
    #[must_use]
    pub fn batch_wait(mut self, wait: Duration) -> Self {
        self.batch_wait = wait;
        self
    }

    /// How long an idle fetch waits on the brokers. Default 100 ms.
    #[must_use]
    pub fn fetch_wait(mut self, wait: Duration) -> Self {
        self.fetch_wait = wait;
        self
    }

    /// The consumer group session timeout. Default 10 s.
    #[must_use]
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long connecting and topic requests may take. Default 10 s.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets another librdkafka setting for every client.
    #[must_use]
    pub fn client_setting(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.client_config.insert(key.into(), value.into());
        self
    }

    /// Checks every option; the error names the option and what it accepts.
    pub(crate) fn validate(&self) -> Result<(), KafkaError> {
        let invalid = |message: String| Err(KafkaError::InvalidOptions(message));
        if self.bootstrap_servers.trim().is_empty() {
            return invalid(
                "`bootstrap_servers` is empty: name at least one broker, like `127.0.0.1:9092`"
                    .to_owned(),
            );
        }
        if self.prefix.is_empty()
            || self.prefix.len() > MAX_PREFIX_BYTES
            || !self
                .prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return invalid(format!(
                "`prefix` {:?} is not usable in topic names: use 1 to {MAX_PREFIX_BYTES} ASCII letters, digits, `.`, `_` or `-`",
                self.prefix
            ));
        }
        if self.partitions == 0 || self.partitions > 10_000 {
            return invalid(format!(
                "`partitions` is {}: use 1 to 10000",
                self.partitions
            ));
        }
        if self.replication_factor == 0 || self.replication_factor < -1 {
            return invalid(format!(
                "`replication_factor` is {}: use -1 (the brokers' default) or 1 and more",
                self.replication_factor
            ));
        }
        if self.message_timeout < Duration::from_secs(1) {
            return invalid(format!(
                "`message_timeout` is {:?}: use at least 1 s",
                self.message_timeout
            ));
        }
        if self.batch_wait > Duration::from_secs(1) {
            return invalid(format!(
                "`batch_wait` is {:?}: use at most 1 s",
                self.batch_wait
            ));
        }
        if self.fetch_wait.is_zero() || self.fetch_wait > Duration::from_secs(10) {
            return invalid(format!(
                "`fetch_wait` is {:?}: use 1 ms to 10 s",
                self.fetch_wait
            ));
        }
        if self.session_timeout < Duration::from_secs(6)
            || self.session_timeout > Duration::from_secs(300)
        {
            return invalid(format!(
                "`session_timeout` is {:?}: use 6 s (brokers' default `group.min.session.timeout.ms`) to 5 min",
                self.session_timeout
            ));
        }
        if self.request_timeout.is_zero() {
            return invalid("`request_timeout` is zero: use at least 1 ms".to_owned());
        }
        if let Some(key) = self
            .client_config
            .keys()
            .find(|key| RESERVED_SETTINGS.contains(&key.as_str()))
        {
            return invalid(format!(
                "`client_config` sets `{key}`, which this transport sets itself (its guarantees rest on it): remove it, or use the option of the same meaning"
            ));
        }
        Ok(())
    }
}

/// Milliseconds of `duration` as librdkafka's settings take them.
pub(crate) fn millis(duration: Duration) -> String {
    duration.as_millis().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(options: KafkaOptions) -> String {
        match options.validate() {
            Err(KafkaError::InvalidOptions(message)) => message,
            other => panic!("expected invalid options, got {other:?}"),
        }
    }

    #[test]
    fn the_defaults_are_valid() {
        assert!(KafkaOptions::default().validate().is_ok());
    }

    #[test]
    fn each_bad_option_is_named() {
        assert!(refused(KafkaOptions::new(" ")).contains("bootstrap_servers"));
        assert!(refused(KafkaOptions::default().prefix("a b")).contains("prefix"));
        assert!(refused(KafkaOptions::default().prefix("")).contains("prefix"));
        assert!(refused(KafkaOptions::default().partitions(0)).contains("partitions"));
        assert!(
            refused(KafkaOptions::default().replication_factor(0)).contains("replication_factor")
        );
        assert!(
            refused(KafkaOptions::default().message_timeout(Duration::from_millis(10)))
                .contains("message_timeout")
        );
        assert!(
            refused(KafkaOptions::default().batch_wait(Duration::from_secs(2)))
                .contains("batch_wait")
        );
        assert!(
            refused(KafkaOptions::default().session_timeout(Duration::ZERO))
                .contains("session_timeout")
        );
        assert!(refused(KafkaOptions::default().client_setting("acks", "1")).contains("`acks`"));
        assert!(KafkaOptions::default()
            .client_setting("client.id", "shop")
            .validate()
            .is_ok());
    }
}
