//! [`HttpOptions`]: what the router needs besides the store — the admin token, the stuck
//! threshold of the health check, and the Prometheus handle that renders `/metrics`.

use std::fmt;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;

/// The admin token, compared in constant time and never printed.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Token(String);

impl Token {
    /// Whether `candidate` is this token (constant time in the token's length).
    pub(crate) fn matches(&self, candidate: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), candidate.as_bytes());
        let mut diff = u8::from(a.len() != b.len());
        for (i, x) in a.iter().enumerate() {
            diff |= x ^ b.get(i).copied().unwrap_or(0);
        }
        diff == 0
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

/// Options of the HTTP endpoints. `Default` gives: no token, a stuck threshold of five
/// minutes (the spec's `stuck-threshold` default), no Prometheus handle.
#[derive(Clone)]
pub struct HttpOptions {
    pub(crate) token: Option<Token>,
    pub(crate) stuck_threshold: Duration,
    pub(crate) metrics: Option<PrometheusHandle>,
    pub(crate) health_timeout: Duration,
    pub(crate) live_for: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            stuck_threshold: Duration::from_secs(300),
            metrics: None,
            health_timeout: Duration::from_secs(5),
            live_for: bandeja_core::admin::longest_live_for(),
        }
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("token", &self.token)
            .field("stuck_threshold", &self.stuck_threshold)
            .field("metrics", &self.metrics.is_some())
            .field("health_timeout", &self.health_timeout)
            .field("live_for", &self.live_for)
            .finish()
    }
}

impl HttpOptions {
    /// The defaults (see [`HttpOptions`]).
    pub fn new() -> Self {
        HttpOptions::default()
    }

    /// Options from a bandeja configuration: its `stuck-threshold`, and the time a process
    /// with that configuration counts as live after its last heartbeat.
    pub fn from_config(config: &bandeja_core::Config) -> Self {
        HttpOptions::default()
            .stuck_threshold(config.stuck_threshold)
            .live_for(bandeja_core::subscriptions::live_for(
                config.stuck_threshold,
            ))
    }

    /// The admin token (default: none). State-changing endpoints always require it as
    /// `Authorization: Bearer <token>` — without a token they are refused — and, when a
    /// token is set, so do the message listings (payloads are business data). An empty or
    /// blank token counts as none.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.token = (!token.trim().is_empty()).then_some(Token(token));
        self
    }

    /// PENDING rows older than this make `/health` DOWN (default: five minutes).
    #[must_use]
    pub fn stuck_threshold(mut self, threshold: Duration) -> Self {
        self.stuck_threshold = threshold;
        self
    }

    /// The Prometheus handle whose metrics `/metrics` renders (default: none; `/metrics`
    /// then shows only the box gauges). See [`crate::metrics::install_recorder`].
    #[must_use]
    pub fn metrics(mut self, handle: PrometheusHandle) -> Self {
        self.metrics = Some(handle);
        self
    }

    /// How long `/health` and `/metrics` wait for the database (default: five seconds);
    /// past it the database counts as unreachable.
    #[must_use]
    pub fn health_timeout(mut self, timeout: Duration) -> Self {
        self.health_timeout = timeout;
        self
    }

    /// How long after its last heartbeat a process counts as live, for `/subscribers`, the
    /// subscriptions' health and retirement (refused while a live process runs the
    /// subscription). Default: 30 seconds, the longest any process needs (a standalone
    /// server does not know the stuck threshold the processes run with);
    /// [`HttpOptions::from_config`] sets the one of that configuration. Shorter than the
    /// processes' own would take running processes for stopped ones.
    #[must_use]
    pub fn live_for(mut self, live_for: Duration) -> Self {
        self.live_for = live_for;
        self
    }

    /// Whether a token is configured.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_exactly_and_blank_means_none() {
        let token = Token("s3cret".to_owned());
        assert!(token.matches("s3cret"));
        assert!(!token.matches("s3cre"));
        assert!(!token.matches("s3cretx"));
        assert!(!token.matches(""));
        assert!(!HttpOptions::new().token("  ").has_token());
        assert_eq!(format!("{token:?}"), "Token(***)");
    }
}
