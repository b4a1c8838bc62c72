//! What [`RedisTransport::connect`](crate::RedisTransport::connect) needs: the server, the
//! names, the partition count, trimming, and the timings of reading and taking over.

use std::fmt;
use std::time::Duration;

use redis::{ConnectionAddr, IntoConnectionInfo};

use crate::error::RedisError;

/// The options of a [`RedisTransport`](crate::RedisTransport). Build them with [`Default`]
/// and the setters (or a struct literal ending in `..Default::default()`); each setter
/// states its default.
///
/// Every process of one system must agree on `prefix` and `partitions` (publishers route
/// by them, consumers read by them); `connect` refuses a process whose partition count
/// differs from the one recorded by the first process of the prefix.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// The server (`redis://[user:password@]host:port[/db]`, or `redis+unix:///path`).
    /// Default `redis://127.0.0.1:6379`.
    pub url: String,
    /// The first part of every key (`<prefix>.events.p0`…): the services of one system
    /// share it. ASCII letters, digits, `-`, `_`, `.` and `:`, 1 to 100 bytes. Default
    /// `bandeja`.
    pub prefix: String,
    /// How many partitions (streams) each kind, or each command topic, is split into.
    /// Default 8.
    pub partitions: u16,
    /// How long an entry may stay pending (delivered, not acknowledged) with a consumer
    /// before another process of the service takes it over with `XAUTOCLAIM`: the time a
    /// process that died holds its entries. A live consumer refreshes its entries well
    /// before (every third of it). At least 100 ms, at most a day. Default 30 s.
    pub claim_idle: Duration,
    /// The approximate number of entries a stream keeps (`XADD … MAXLEN ~ max_len`):
    /// older entries are trimmed, delivered or not. At least 1. Default 1,000,000.
    pub max_len: u64,
    /// How long one `XREADGROUP … BLOCK` waits for new entries before the consumer looks
    /// for entries to take over and asks again. 1 ms to 60 s. Default 1 s.
    pub read_block: Duration,
    /// How long connecting, and any command but the blocking read, may take. Default 5 s.
    pub connect_timeout: Duration,
    /// The longest pause between two reconnection attempts (they start at 100 ms and
    /// double). Default 5 s.
    pub reconnect_max_backoff: Duration,
}

/// The default server URL.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// The longest prefix accepted.
const MAX_PREFIX_BYTES: usize = 100;

/// The shortest `claim_idle`: below it a consumer storing a batch would lose it to
/// another process between two refreshes.
const MIN_CLAIM_IDLE: Duration = Duration::from_millis(100);

/// The longest `claim_idle` (entries handed back at a stop are made this idle).
pub(crate) const MAX_CLAIM_IDLE: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest `read_block`.
const MAX_READ_BLOCK: Duration = Duration::from_secs(60);

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            url: DEFAULT_URL.to_owned(),
            prefix: "bandeja".to_owned(),
            partitions: 8,
            claim_idle: Duration::from_secs(30),
            max_len: 1_000_000,
            read_block: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(5),
            reconnect_max_backoff: Duration::from_secs(5),
        }
    }
}

impl RedisOptions {
    /// The defaults with `url`.
    pub fn new(url: impl Into<String>) -> Self {
        RedisOptions::default().url(url)
    }

    /// The server. Default `redis://127.0.0.1:6379`.
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// The prefix of every key. Default `bandeja`.
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

    /// How long a dead consumer's entries wait before another process takes them over.
    /// Default 30 s.
    #[must_use]
    pub fn claim_idle(mut self, claim_idle: Duration) -> Self {
        self.claim_idle = claim_idle;
        self
    }

    /// The approximate length each stream is trimmed to. Default 1,000,000.
    #[must_use]
    pub fn max_len(mut self, max_len: u64) -> Self {
        self.max_len = max_len;
        self
    }

    /// How long one blocking read waits. Default 1 s.
    #[must_use]
    pub fn read_block(mut self, read_block: Duration) -> Self {
        self.read_block = read_block;
        self
    }

    /// How long connecting and each command may take. Default 5 s.
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

    /// Checks the options; returns the client (which has not connected yet).
    pub(crate) fn validate(&self) -> Result<redis::Client, RedisError> {
        let invalid = |reason: String| Err(RedisError::InvalidOptions(reason));
        if self.url.starts_with("rediss://") || self.url.starts_with("valkeys://") {
            return invalid(
                "`url` uses rediss://, but bandeja-redis is built without TLS: use redis:// (or a TLS-terminating proxy)".to_owned(),
            );
        }
        let client = match self.url.as_str().into_connection_info() {
            Ok(info) => match redis::Client::open(info) {
                Ok(client) => client,
                Err(error) => return invalid(format!("`url` cannot be used ({error})")),
            },
            Err(error) => {
                return invalid(format!(
                    "`url` is not a Redis URL ({error}): expected redis://[user:password@]host:port[/db]"
                ))
            }
        };
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
        if self.claim_idle < MIN_CLAIM_IDLE || self.claim_idle > MAX_CLAIM_IDLE {
            return invalid(format!(
                "`claim_idle` must be between {MIN_CLAIM_IDLE:?} and {MAX_CLAIM_IDLE:?}, not {:?}",
                self.claim_idle
            ));
        }
        if self.max_len == 0 || i64::try_from(self.max_len).is_err() {
            return invalid(format!(
                "`max_len` must be at least 1 (and fit in 63 bits), not {}",
                self.max_len
            ));
        }
        if self.read_block < Duration::from_millis(1) || self.read_block > MAX_READ_BLOCK {
            return invalid(format!(
                "`read_block` must be between 1 ms and {MAX_READ_BLOCK:?}, not {:?}",
                self.read_block
            ));
        }
        if self.connect_timeout.is_zero() {
            return invalid("`connect_timeout` must be above zero".to_owned());
        }
        if self.reconnect_max_backoff.is_zero() {
            return invalid("`reconnect_max_backoff` must be above zero".to_owned());
        }
        Ok(client)
    }
}

/// The server's address without its password, for messages and logs.
pub(crate) fn redacted(client: &redis::Client) -> String {
    let info = client.get_connection_info();
    let settings = info.redis_settings();
    let user = settings
        .username()
        .map(|user| format!("{user}@"))
        .unwrap_or_default();
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => {
            format!("redis://{user}{host}:{port}/{}", settings.db())
        }
        ConnectionAddr::Unix(path) => format!("redis+unix://{}", path.display()),
        other => format!("{other}"),
    }
}

impl fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self
            .url
            .as_str()
            .into_connection_info()
            .ok()
            .and_then(|info| redis::Client::open(info).ok())
            .map(|client| redacted(&client))
            .unwrap_or_else(|| "<not a Redis URL>".to_owned());
        f.debug_struct("RedisOptions")
            .field("url", &url)
            .field("prefix", &self.prefix)
            .field("partitions", &self.partitions)
            .field("claim_idle", &self.claim_idle)
            .field("max_len", &self.max_len)
            .field("read_block", &self.read_block)
            .field("connect_timeout", &self.connect_timeout)
            .field("reconnect_max_backoff", &self.reconnect_max_backoff)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_setters_set() {
        assert!(RedisOptions::default().validate().is_ok());
        let options = RedisOptions::new("redis://h:1/2")
            .prefix("shop")
            .partitions(2)
            .claim_idle(Duration::from_secs(2))
            .max_len(10)
            .read_block(Duration::from_millis(200))
            .connect_timeout(Duration::from_secs(1))
            .reconnect_max_backoff(Duration::from_secs(1));
        assert_eq!(options.url, "redis://h:1/2");
        assert_eq!(
            (options.partitions, options.max_len, options.claim_idle),
            (2, 10, Duration::from_secs(2))
        );
        let client = options.validate().expect("valid");
        assert_eq!(redacted(&client), "redis://h:1/2");
    }

    #[test]
    fn bad_values_say_which_option() {
        let cases = [
            (RedisOptions::new("http://x"), "`url`"),
            (RedisOptions::new("rediss://h:6379"), "TLS"),
            (RedisOptions::default().prefix(""), "`prefix`"),
            (RedisOptions::default().prefix("a b"), "`prefix`"),
            (RedisOptions::default().prefix("a*"), "`prefix`"),
            (RedisOptions::default().partitions(0), "`partitions`"),
            (
                RedisOptions::default().claim_idle(Duration::from_millis(10)),
                "`claim_idle`",
            ),
            (
                RedisOptions::default().claim_idle(Duration::from_secs(2 * 24 * 3600)),
                "`claim_idle`",
            ),
            (RedisOptions::default().max_len(0), "`max_len`"),
            (RedisOptions::default().max_len(u64::MAX), "`max_len`"),
            (
                RedisOptions::default().read_block(Duration::ZERO),
                "`read_block`",
            ),
            (
                RedisOptions::default().connect_timeout(Duration::ZERO),
                "`connect_timeout`",
            ),
            (
                RedisOptions::default().reconnect_max_backoff(Duration::ZERO),
                "`reconnect_max_backoff`",
            ),
        ];
        for (options, expected) in cases {
            let error = options.validate().expect_err("invalid").to_string();
            assert!(error.contains(expected), "{error} mentions {expected}");
        }
    }

    #[test]
    fn debug_hides_the_password() {
        let options = RedisOptions::new("redis://user:s3cret@host:6380/1");
        let shown = format!("{options:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("redis://user@host:6380/1"), "{shown}");
    }
}
