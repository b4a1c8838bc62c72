//! [`HttpOptions`]: what the router needs besides the store — the admin token, the stuck
//! and FAILED thresholds of the health checks, the runtime's liveness probe, and the
//! Prometheus handle that renders `/metrics`.

use std::fmt;
use std::time::Duration;

use bandeja_core::runtime::Liveness;
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
/// minutes (the spec's `stuck-threshold` default), no FAILED threshold, no liveness probe,
/// no Prometheus handle.
#[derive(Clone)]
pub struct HttpOptions {
    pub(crate) token: Option<Token>,
    pub(crate) stuck_threshold: Duration,
    pub(crate) failed_threshold: Option<u64>,
    pub(crate) liveness: Option<Liveness>,
    pub(crate) metrics: Option<PrometheusHandle>,
    pub(crate) health_timeout: Duration,
    pub(crate) live_for: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            stuck_threshold: Duration::from_secs(300),
            failed_threshold: None,
            liveness: None,
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
            .field("failed_threshold", &self.failed_threshold)
            .field("liveness", &self.liveness.is_some())
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

    /// PENDING rows unchanged for longer than this make `/health/ready` and `/health` DOWN
    /// (default: five minutes).
    #[must_use]
    pub fn stuck_threshold(mut self, threshold: Duration) -> Self {
        self.stuck_threshold = threshold;
        self
    }

    /// More FAILED rows than this (all boxes together) make `/health/ready` and `/health`
    /// DOWN (default: none — FAILED rows never change the verdict). `0`: any FAILED row
    /// does. FAILED rows wait for an operator and never clear by themselves, so a pod taken
    /// out of rotation by them stays out until someone retries or discards them: set it
    /// when that is what you want, or alert on `bandeja_box_rows{status="FAILED"}` instead.
    #[must_use]
    pub fn failed_threshold(mut self, threshold: u64) -> Self {
        self.failed_threshold = Some(threshold);
        self
    }

    /// The liveness probe of the runtime whose workers this process runs
    /// ([`Running::liveness`](bandeja_core::Running::liveness)): `/health/live` is DOWN
    /// once one of its tasks stopped (a shutdown, a panic), and `/health` shows them.
    /// Default: none — a process that runs no workers (`bandeja serve`) is live while it
    /// answers.
    ///
    /// ```no_run
    /// # async fn demo(store: bandeja_sqlite::SqliteStore) -> bandeja_core::Result<()> {
    /// let bandeja = bandeja_core::Bandeja::builder(store.clone()).build()?;
    /// let running = bandeja.start().await?;
    /// let options = bandeja_http::HttpOptions::new().liveness(running.liveness());
    /// let app = bandeja_http::router(store, options);
    /// # let _ = app; Ok(()) }
    /// ```
    #[must_use]
    pub fn liveness(mut self, probe: Liveness) -> Self {
        self.liveness = Some(probe);
        self
    }

    /// The Prometheus handle whose metrics `/metrics` renders (default: none; `/metrics`
    /// then shows only the box gauges). See [`crate::metrics::install_recorder`].
    #[must_use]
    pub fn metrics(mut self, handle: PrometheusHandle) -> Self {
        self.metrics = Some(handle);
        self
    }

    /// How long `/health`, `/health/ready` and `/metrics` wait for the database (default:
    /// five seconds); past it the database counts as unreachable. `/health/live` never
    /// asks the database.
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
