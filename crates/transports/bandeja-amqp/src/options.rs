//! What [`AmqpTransport::connect`](crate::AmqpTransport::connect) needs: the broker, the
//! names, the partition count and the timings.

use std::fmt;
use std::time::Duration;

use lapin::uri::{AMQPScheme, AMQPUri};

use crate::error::AmqpError;

/// The options of an [`AmqpTransport`](crate::AmqpTransport). Build them with
/// [`Default`] and the setters (or a struct literal ending in `..Default::default()`); each
/// setter states its default.
#[derive(Clone, PartialEq, Eq)]
pub struct AmqpOptions {
    /// The broker's URI (`amqp://user:password@host:port/vhost`, the vhost URL-encoded).
    /// Default `amqp://guest:guest@127.0.0.1:5672/%2f`.
    pub url: String,
    /// The first part of every exchange and queue name (`<prefix>.events`,
    /// `<prefix>.<service>.events.p0`…): the services of one system share it. Default
    /// `bandeja`.
    pub prefix: String,
    /// How many partitions each address is split into; publishers and consumers of one
    /// system must agree. Default 8.
    pub partitions: u16,
    /// How long to wait for the broker to accept a connection. Default 5 s.
    pub connect_timeout: Duration,
    /// The longest pause between two reconnection attempts (they start at 100 ms and
    /// double). Default 5 s.
    pub reconnect_max_backoff: Duration,
    /// When set, every queue is declared with `x-expires`: RabbitMQ deletes it once it has
    /// had no consumer for that long (messages included). For tests and temporary
    /// namespaces, never for production queues. Default `None`.
    pub queue_expires: Option<Duration>,
    /// When set, both exchanges are declared auto-delete: RabbitMQ deletes an exchange
    /// when its last queue is unbound from it. For tests and temporary namespaces (with
    /// [`Self::queue_expires`]). Default `false`.
    pub auto_delete_exchanges: bool,
}

/// The default broker URI.
pub const DEFAULT_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// The longest exchange or queue prefix accepted (names must fit in 255 bytes).
const MAX_PREFIX_BYTES: usize = 100;

impl Default for AmqpOptions {
    fn default() -> Self {
        AmqpOptions {
            url: DEFAULT_URL.to_owned(),
            prefix: "bandeja".to_owned(),
            partitions: 8,
            connect_timeout: Duration::from_secs(5),
            reconnect_max_backoff: Duration::from_secs(5),
            queue_expires: None,
            auto_delete_exchanges: false,
        }
    }
}

impl AmqpOptions {
    /// The broker's URI. Default `amqp://guest:guest@127.0.0.1:5672/%2f`.
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// The prefix of every exchange and queue name. Default `bandeja`.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The partition count (at least 1). Default 8.
    #[must_use]
    pub fn partitions(mut self, partitions: u16) -> Self {
        self.partitions = partitions;
        self
    }

    /// How long to wait for a connection. Default 5 s.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The longest pause between reconnection attempts. Default 5 s.
    #[must_use]
    pub fn reconnect_max_backoff(mut self, backoff: Duration) -> Self {
        self.reconnect_max_backoff = backoff;
        self
    }

    /// Queues expire after this long without a consumer (tests only). Default `None`.
    #[must_use]
    pub fn queue_expires(mut self, expires: Option<Duration>) -> Self {
        self.queue_expires = expires;
        self
    }

    /// Exchanges are auto-delete (tests only). Default `false`.
    #[must_use]
    pub fn auto_delete_exchanges(mut self, auto_delete: bool) -> Self {
        self.auto_delete_exchanges = auto_delete;
        self
    }

    /// Checks the options; returns the parsed URI.
    pub(crate) fn validate(&self) -> Result<AMQPUri, AmqpError> {
        let invalid = |reason: String| Err(AmqpError::InvalidOptions(reason));
        let uri: AMQPUri = match self.url.parse() {
            Ok(uri) => uri,
            Err(error) => {
                return invalid(format!(
                "`url` is not an AMQP URI ({error}): expected amqp://user:password@host:port/vhost"
            ))
            }
        };
        if uri.scheme == AMQPScheme::AMQPS {
            return invalid(
                "`url` uses amqps://, but bandeja-amqp is built without TLS: use amqp:// (or a TLS-terminating proxy)".to_owned(),
            );
        }
        if self.prefix.is_empty() || self.prefix.len() > MAX_PREFIX_BYTES {
            return invalid(format!(
                "`prefix` must have 1 to {MAX_PREFIX_BYTES} bytes, not {}",
                self.prefix.len()
            ));
        }
        if let Some(c) = self
            .prefix
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')))
        {
            return invalid(format!(
                "`prefix` {:?} contains {c:?}: use ASCII letters, digits, `-`, `_`, `.` or `:`",
                self.prefix
            ));
        }
        if self.partitions == 0 {
            return invalid("`partitions` must be at least 1".to_owned());
        }
        if self.connect_timeout.is_zero() {
            return invalid("`connect_timeout` must be above zero".to_owned());
        }
        if self.reconnect_max_backoff.is_zero() {
            return invalid("`reconnect_max_backoff` must be above zero".to_owned());
        }
        if let Some(expires) = self.queue_expires {
            if expires.as_millis() == 0 || i64::try_from(expires.as_millis()).is_err() {
                return invalid(format!(
                    "`queue_expires` must be at least 1 ms (and fit in 64 bits of milliseconds), not {expires:?}"
                ));
            }
        }
        Ok(uri)
    }
}

/// The URI without its password, for messages and logs.
pub(crate) fn redacted(uri: &AMQPUri) -> String {
    let authority = &uri.authority;
    format!(
        "amqp://{}@{}:{}/{}",
        authority.userinfo.username,
        authority.host,
        authority.port,
        uri.vhost.replace('%', "%25").replace('/', "%2f")
    )
}

impl fmt::Debug for AmqpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self
            .url
            .parse::<AMQPUri>()
            .map(|uri| redacted(&uri))
            .unwrap_or_else(|_| "<not an AMQP URI>".to_owned());
        f.debug_struct("AmqpOptions")
            .field("url", &url)
            .field("prefix", &self.prefix)
            .field("partitions", &self.partitions)
            .field("connect_timeout", &self.connect_timeout)
            .field("reconnect_max_backoff", &self.reconnect_max_backoff)
            .field("queue_expires", &self.queue_expires)
            .field("auto_delete_exchanges", &self.auto_delete_exchanges)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_say_which_option() {
        assert!(AmqpOptions::default().validate().is_ok());
        let cases = [
            (AmqpOptions::default().url("http://x"), "`url`"),
            (AmqpOptions::default().url("amqps://h/%2f"), "TLS"),
            (AmqpOptions::default().prefix(""), "`prefix`"),
            (AmqpOptions::default().prefix("a b"), "`prefix`"),
            (AmqpOptions::default().partitions(0), "`partitions`"),
            (
                AmqpOptions::default().connect_timeout(Duration::ZERO),
                "`connect_timeout`",
            ),
            (
                AmqpOptions::default().reconnect_max_backoff(Duration::ZERO),
                "`reconnect_max_backoff`",
            ),
            (
                AmqpOptions::default().queue_expires(Some(Duration::from_micros(10))),
                "`queue_expires`",
            ),
        ];
        for (options, expected) in cases {
            let error = options.validate().expect_err("invalid").to_string();
            assert!(error.contains(expected), "{error} mentions {expected}");
        }
    }

    #[test]
    fn debug_hides_the_password() {
        let options = AmqpOptions::default().url("amqp://user:s3cret@host:5672/%2f");
        let shown = format!("{options:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("user@host:5672"), "{shown}");
    }
}
