//! [`NatsOptions`]: where the server is, how the streams and consumers are named and sized.

use std::time::Duration;

use bandeja_core::transport::routing;

use crate::error::OptionsError;

/// How [`NatsTransport`](crate::NatsTransport) connects and names its streams and consumers.
///
/// Every process of one system must agree on `prefix` and `partitions` (publishers route by
/// them, consumers read by them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsOptions {
    /// The server (`nats://host:port`, or several separated by commas). Default
    /// `nats://127.0.0.1:4222`.
    pub url: String,
    /// The first token of every subject and (upper-cased) of the stream names. ASCII letters,
    /// digits, `-` and `_`. Default `bandeja`.
    pub prefix: String,
    /// How many partitions each address is split into. Default 8.
    pub partitions: u16,
    /// How long a delivered message may stay unacknowledged before JetStream delivers it
    /// again (a consumer that stored it and died). Default 30 s.
    pub ack_wait: Duration,
    /// How long the streams keep a message (the limit past which a consumer that was away
    /// misses it). Default 7 days.
    pub max_age: Duration,
    /// How long one pull waits for messages before asking again. Default 1 s.
    pub fetch_wait: Duration,
    /// How long the first connection may take. Default 5 s.
    pub connect_timeout: Duration,
}

impl Default for NatsOptions {
    fn default() -> Self {
        NatsOptions {
            url: "nats://127.0.0.1:4222".to_owned(),
            prefix: "bandeja".to_owned(),
            partitions: 8,
            ack_wait: Duration::from_secs(30),
            max_age: Duration::from_secs(7 * 24 * 60 * 60),
            fetch_wait: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(5),
        }
    }
}

impl NatsOptions {
    /// The defaults with `url`.
    pub fn new(url: impl Into<String>) -> Self {
        NatsOptions::default().url(url)
    }

    /// The server. Default `nats://127.0.0.1:4222`.
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// The subject prefix and stream name stem. Default `bandeja`.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Partitions per address. Default 8.
    #[must_use]
    pub fn partitions(mut self, partitions: u16) -> Self {
        self.partitions = partitions;
        self
    }

    /// Redelivery delay of unacknowledged messages. Default 30 s.
    #[must_use]
    pub fn ack_wait(mut self, ack_wait: Duration) -> Self {
        self.ack_wait = ack_wait;
        self
    }

    /// Stream retention. Default 7 days.
    #[must_use]
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// How long one pull waits for messages. Default 1 s.
    #[must_use]
    pub fn fetch_wait(mut self, fetch_wait: Duration) -> Self {
        self.fetch_wait = fetch_wait;
        self
    }

    /// Timeout of the first connection. Default 5 s.
    #[must_use]
    pub fn connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = connect_timeout;
        self
    }

    /// Checks what the server would refuse later, or what would make no sense.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.url.trim().is_empty() {
            return Err(OptionsError::EmptyUrl);
        }
        if self.prefix.is_empty() || routing::token(&self.prefix) != self.prefix {
            return Err(OptionsError::Prefix {
                prefix: self.prefix.clone(),
                suggestion: if self.prefix.is_empty() {
                    "bandeja".to_owned()
                } else {
                    routing::token(&self.prefix)
                },
            });
        }
        if self.partitions == 0 {
            return Err(OptionsError::NoPartitions);
        }
        for (field, value) in [
            ("ack_wait", self.ack_wait),
            ("max_age", self.max_age),
            ("fetch_wait", self.fetch_wait),
            ("connect_timeout", self.connect_timeout),
        ] {
            if value < Duration::from_millis(1) {
                return Err(OptionsError::Duration { field });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_setters_set() {
        NatsOptions::default().validate().expect("valid defaults");
        let options = NatsOptions::new("nats://h:1")
            .prefix("shop")
            .partitions(2)
            .ack_wait(Duration::from_secs(2))
            .max_age(Duration::from_secs(60))
            .fetch_wait(Duration::from_millis(200))
            .connect_timeout(Duration::from_secs(1));
        assert_eq!(options.url, "nats://h:1");
        assert_eq!(options.prefix, "shop");
        assert_eq!(options.partitions, 2);
        assert_eq!(options.fetch_wait, Duration::from_millis(200));
        options.validate().expect("valid");
    }

    #[test]
    fn bad_options_say_what_to_change() {
        let bad = |options: NatsOptions| options.validate().expect_err("invalid");
        assert_eq!(
            bad(NatsOptions::default().partitions(0)),
            OptionsError::NoPartitions
        );
        let prefix = bad(NatsOptions::default().prefix("my.app"));
        assert_eq!(
            prefix,
            OptionsError::Prefix {
                prefix: "my.app".into(),
                suggestion: "my_app".into()
            }
        );
        assert!(prefix.to_string().contains("my_app"), "{prefix}");
        assert!(matches!(
            bad(NatsOptions::default().prefix("")),
            OptionsError::Prefix { .. }
        ));
        assert_eq!(
            bad(NatsOptions::default().fetch_wait(Duration::ZERO)),
            OptionsError::Duration {
                field: "fetch_wait"
            }
        );
        assert_eq!(bad(NatsOptions::new(" ")), OptionsError::EmptyUrl);
    }
}
