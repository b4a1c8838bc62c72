//! The settings of one worker group ([`WorkerConfig`]) and their defaults, one function
//! per box.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::record::BoxKind;

use super::forms;
use super::CompletionMode;

/// Whether a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enabled {
    /// Always runs (`true`).
    On,
    /// Never runs (`false`).
    Off,
    /// Runs only when the application registered something for it (`"auto"`): an event
    /// handler for `events.inbox`, a command handler for `commands.inbox`, a command
    /// handler or a non-empty `commands.topics` for `commands.outbox`.
    Auto,
}

impl Enabled {
    /// Whether the worker runs, given whether the application uses it:
    /// `On` → `true`, `Off` → `false`, `Auto` → `used`.
    #[must_use]
    pub fn resolve(self, used: bool) -> bool {
        match self {
            Enabled::On => true,
            Enabled::Off => false,
            Enabled::Auto => used,
        }
    }
}

impl FromStr for Enabled {
    type Err = String;

    /// Accepts `true`/`false`/`auto` and `1`/`0`, `yes`/`no`, `on`/`off`, case-insensitively.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Enabled::Auto),
            other => parse_bool(other)
                .map(|on| if on { Enabled::On } else { Enabled::Off })
                .ok_or_else(|| "expected `true`, `false` or `auto`".to_owned()),
        }
    }
}

impl fmt::Display for Enabled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Enabled::On => "true",
            Enabled::Off => "false",
            Enabled::Auto => "auto",
        })
    }
}

/// `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`, case-insensitively.
pub(super) fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// How the handlers of an inbox batch are wrapped in transactions.
///
/// Either way a handler's writes commit together with its COMPLETED mark, and a failing
/// handler rolls back only its own work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerTransaction {
    /// The store decides, per subscriber: the subscribers measured fast (see the engine's
    /// `pace`) run batched, the others one message per transaction. Both stores batch; on
    /// SQLite (one writer) a chunk holds at most 20 ms of measured handler time, so the
    /// write lock it holds is soon free for the application.
    Auto,
    /// One transaction per message.
    Message,
    /// One transaction per batch (split over the handler concurrency), a savepoint per
    /// handler, all COMPLETED marks in one statement.
    Batch,
}

impl HandlerTransaction {
    /// The configuration value: `auto`, `message` or `batch`.
    pub(super) const fn as_str(self) -> &'static str {
        match self {
            HandlerTransaction::Auto => "auto",
            HandlerTransaction::Message => "message",
            HandlerTransaction::Batch => "batch",
        }
    }
}

impl FromStr for HandlerTransaction {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(HandlerTransaction::Auto),
            "message" => Ok(HandlerTransaction::Message),
            "batch" => Ok(HandlerTransaction::Batch),
            _ => Err("expected `auto`, `message` or `batch`".to_owned()),
        }
    }
}

settings! {
    setters;
    /// Settings of one worker group: the table `[events.outbox]`, `[events.inbox]`,
    /// `[commands.outbox]` or `[commands.inbox]`, each key a field in kebab-case.
    ///
    /// The defaults depend on the box ([`BoxKind::defaults`]), so this struct has no
    /// `Default` and its own `Deserialize` wants every key: a group's table read through
    /// [`Config`](super::Config) (a file, the environment, `Config`'s `Deserialize`) is laid
    /// over the box's defaults or the settings made in code, and may leave keys out.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case", deny_unknown_fields)]
    pub struct WorkerConfig {
        /// Whether the worker runs: `true`, `false`, or `auto`: when the application uses
        /// the box (an event handler for `events.inbox`, a command handler for
        /// `commands.inbox`, a command handler or a route in `commands.topics` for
        /// `commands.outbox`).
        pub enabled: Enabled,
        /// Pause between two polls.
        #[serde(with = "forms::duration")]
        pub polling_interval: Duration,
        /// Pause before the first poll.
        #[serde(with = "forms::duration")]
        pub polling_initial_delay: Duration,
        /// Shortest time a claim holds its lease; at most `lock-at-most-for`. Leases are per
        /// row, so it only bounds the lease from below.
        #[serde(with = "forms::duration")]
        pub lock_at_least_for: Duration,
        /// The lease: how long a claimed row stays claimed without a renewal before another
        /// worker may take it over. Work in flight renews it about every third of it.
        #[serde(with = "forms::duration")]
        pub lock_at_most_for: Duration,
        /// Messages claimed per poll, 1 to 10000.
        #[serde(with = "forms::batch_size")]
        pub batch_size: usize,
        /// Retries after the first attempt before a message fails for good, at most 1000.
        #[serde(deserialize_with = "forms::retries")]
        pub max_retries: u32,
        /// Lease takeovers a row may go through before it is FAILED as one that stops its
        /// workers, at most 1000. A takeover happens when the worker holding a row stopped
        /// renewing its lease (a crash, a kill, a lost connection); it is not a failed
        /// attempt and does not count toward `max-retries`.
        #[serde(deserialize_with = "forms::retries")]
        pub max_takeovers: u32,
        /// Delay before the first retry.
        #[serde(with = "forms::duration")]
        pub retry_backoff_initial: Duration,
        /// Largest delay between retries; at least `retry-backoff-initial`.
        #[serde(with = "forms::duration")]
        pub retry_backoff_max: Duration,
        /// Growth factor of the delay from one retry to the next, at least 1.0 (1.0 keeps
        /// the delay constant).
        pub retry_backoff_multiplier: f64,
        /// Fraction of each retry delay that is randomized, 0.0 to 1.0.
        pub retry_jitter: f64,
        /// Time limit of one handler call (inbox groups) or of one publish (outbox groups,
        /// where it is at most half the lease).
        ///
        /// A handler is never stopped before it: the worker renews the lease
        /// (`lock-at-most-for`) of work in flight about every third of the lease, so the
        /// limit may be longer than the lease. A handler is stopped earlier only when its
        /// lease could not be renewed and is about to run out (another worker may then take
        /// the row over).
        #[serde(with = "forms::duration")]
        pub handler_timeout: Duration,
        /// Inbox groups: time limits of their own for some subscribers instead of
        /// `handler-timeout`, a table of subscriber name → duration (in the environment
        /// `name=duration` pairs, which replace the whole table).
        ///
        /// A name no handler of this process is registered under makes
        /// [`BandejaBuilder::build`](crate::BandejaBuilder::build) fail.
        #[serde(with = "forms::timeouts")]
        pub handler_timeouts: BTreeMap<String, Duration>,
        /// Whether messages sharing a partition key are handled in order.
        pub ordered: bool,
        /// Inbox groups: one transaction per message (`message`), one per batch with a
        /// savepoint per handler (`batch`), or the store's choice (`auto`: batches for the
        /// subscribers measured fast, on both stores — SQLite's chunks hold at most 20 ms
        /// of handler time, PostgreSQL's 500 ms).
        pub handler_transaction: HandlerTransaction,
        /// What completing a row does with it: keep it, COMPLETED (`update`), delete it
        /// (`delete`) or move it into `<box>_archive` (`archive`); an inbox keeps a dedup
        /// record of a deleted or archived message.
        pub completion_mode: CompletionMode,
        /// How long COMPLETED rows (and inbox dedup records) are kept before a periodic task
        /// purges them; `off` keeps them.
        #[serde(with = "forms::optional_duration")]
        pub retention: Option<Duration>,
    }
}

impl WorkerConfig {
    /// What the four boxes share; each box's function below sets the rest.
    fn base(enabled: Enabled, polling: u64, initial_delay: u64, least: u64, most: u64) -> Self {
        WorkerConfig {
            enabled,
            polling_interval: Duration::from_secs(polling),
            polling_initial_delay: Duration::from_secs(initial_delay),
            lock_at_least_for: Duration::from_secs(least),
            lock_at_most_for: Duration::from_secs(most),
            batch_size: 50,
            max_retries: 3,
            max_takeovers: 3,
            retry_backoff_initial: Duration::from_secs(1),
            retry_backoff_max: Duration::from_secs(300),
            retry_backoff_multiplier: 2.0,
            retry_jitter: 0.2,
            handler_timeout: Duration::from_secs(300),
            handler_timeouts: BTreeMap::new(),
            ordered: true,
            handler_transaction: HandlerTransaction::Auto,
            completion_mode: CompletionMode::Update,
            retention: None,
        }
    }

    /// Defaults of `events.outbox`: enabled, polling every PT5S after PT2S, locks
    /// PT10S..PT30S, batches of 100, publish timeout PT30S.
    #[must_use]
    pub fn events_outbox_defaults() -> Self {
        WorkerConfig {
            batch_size: 100,
            handler_timeout: Duration::from_secs(30),
            ..Self::base(Enabled::On, 5, 2, 10, 30)
        }
    }

    /// Defaults of `events.inbox`: auto, polling every PT2S after PT10S, locks PT5S..PT20S,
    /// batches of 50, handler timeout PT5M.
    #[must_use]
    pub fn events_inbox_defaults() -> Self {
        Self::base(Enabled::Auto, 2, 10, 5, 20)
    }

    /// Defaults of `commands.outbox`: as `events.inbox` but with a publish timeout of PT30S.
    #[must_use]
    pub fn commands_outbox_defaults() -> Self {
        WorkerConfig {
            handler_timeout: Duration::from_secs(30),
            ..Self::base(Enabled::Auto, 2, 10, 5, 20)
        }
    }

    /// Defaults of `commands.inbox`: the same as `events.inbox`.
    #[must_use]
    pub fn commands_inbox_defaults() -> Self {
        Self::base(Enabled::Auto, 2, 10, 5, 20)
    }

    /// Gives the handler registered under `subscriber` its own time limit, instead of
    /// `handler-timeout` (an entry of `handler-timeouts`; inbox groups only); zero is
    /// rejected by validation.
    #[must_use]
    pub fn handler_timeout_for(mut self, subscriber: impl Into<String>, timeout: Duration) -> Self {
        self.handler_timeouts.insert(subscriber.into(), timeout);
        self
    }

    /// The time limit of one attempt of the handler registered under `subscriber` (its
    /// `handler-timeouts` entry, or else `handler-timeout`). The lease does not cap it:
    /// work in flight renews its lease.
    #[must_use]
    pub fn effective_handler_timeout(&self, subscriber: Option<&str>) -> Duration {
        subscriber
            .and_then(|name| self.handler_timeouts.get(name))
            .copied()
            .unwrap_or(self.handler_timeout)
    }

    /// The delay before retry number `retry_count` (1-based: the first retry is 1; 0 is
    /// treated as 1): `initial * multiplier^(retry_count - 1)`, capped at
    /// `retry-backoff-max`, then multiplied by a random factor in `[1 - jitter, 1]`
    /// computed as `1 - jitter * unit_random`, where `unit_random` is a uniform sample of
    /// `[0, 1)` (out-of-range samples are clamped). Never overflows or panics, even for
    /// huge `retry_count` or an unvalidated configuration.
    #[must_use]
    pub fn backoff(&self, retry_count: u32, unit_random: f64) -> Duration {
        let cap = self.retry_backoff_max;
        let exponent = f64::from(retry_count.saturating_sub(1));
        let raw =
            self.retry_backoff_initial.as_secs_f64() * self.retry_backoff_multiplier.powf(exponent);
        let capped = if raw.is_finite() && raw >= 0.0 {
            raw.min(cap.as_secs_f64())
        } else {
            cap.as_secs_f64()
        };
        let jitter = if self.retry_jitter.is_nan() {
            0.0
        } else {
            self.retry_jitter.clamp(0.0, 1.0)
        };
        let sample = if unit_random.is_nan() {
            0.0
        } else {
            unit_random.clamp(0.0, 1.0)
        };
        let delay = Duration::try_from_secs_f64(capped * (1.0 - jitter * sample)).unwrap_or(cap);
        delay.min(cap)
    }
}

impl BoxKind {
    /// The default settings of this box's worker (its configuration group).
    #[must_use]
    pub fn defaults(self) -> WorkerConfig {
        match self {
            BoxKind::OutboxEvents => WorkerConfig::events_outbox_defaults(),
            BoxKind::InboxEvents => WorkerConfig::events_inbox_defaults(),
            BoxKind::OutboxCommands => WorkerConfig::commands_outbox_defaults(),
            BoxKind::InboxCommands => WorkerConfig::commands_inbox_defaults(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn enabled_resolves_and_parses() {
        assert!(Enabled::On.resolve(false));
        assert!(!Enabled::Off.resolve(true));
        assert!(Enabled::Auto.resolve(true));
        assert!(!Enabled::Auto.resolve(false));
        for (text, expected) in [
            ("true", Enabled::On),
            ("YES", Enabled::On),
            ("on", Enabled::On),
            ("1", Enabled::On),
            ("False", Enabled::Off),
            ("no", Enabled::Off),
            ("off", Enabled::Off),
            ("0", Enabled::Off),
            (" Auto ", Enabled::Auto),
        ] {
            assert_eq!(text.parse::<Enabled>(), Ok(expected), "{text}");
        }
        assert!("maybe".parse::<Enabled>().is_err());
        assert_eq!(Enabled::Auto.to_string(), "auto");
    }

    #[test]
    // Every key listed, and `..` so that a new key does not break the literal.
    #[allow(clippy::needless_update)]
    fn setters_set_every_field() {
        let c = WorkerConfig::events_inbox_defaults()
            .enabled(Enabled::Off)
            .polling_interval(secs(1))
            .polling_initial_delay(secs(2))
            .lock_at_least_for(secs(3))
            .lock_at_most_for(secs(4))
            .batch_size(5)
            .max_retries(6)
            .max_takeovers(13)
            .retry_backoff_initial(secs(7))
            .retry_backoff_max(secs(8))
            .retry_backoff_multiplier(1.5)
            .retry_jitter(0.5)
            .handler_timeout(secs(9))
            .handler_timeouts(BTreeMap::from([("a".to_owned(), secs(11))]))
            .handler_timeout_for("b", secs(12))
            .ordered(false)
            .handler_transaction(HandlerTransaction::Message)
            .completion_mode(CompletionMode::Archive)
            .retention(Some(secs(10)));
        let expected = WorkerConfig {
            enabled: Enabled::Off,
            polling_interval: secs(1),
            polling_initial_delay: secs(2),
            lock_at_least_for: secs(3),
            lock_at_most_for: secs(4),
            batch_size: 5,
            max_retries: 6,
            max_takeovers: 13,
            retry_backoff_initial: secs(7),
            retry_backoff_max: secs(8),
            retry_backoff_multiplier: 1.5,
            retry_jitter: 0.5,
            handler_timeout: secs(9),
            handler_timeouts: BTreeMap::from([
                ("a".to_owned(), secs(11)),
                ("b".to_owned(), secs(12)),
            ]),
            ordered: false,
            handler_transaction: HandlerTransaction::Message,
            completion_mode: CompletionMode::Archive,
            retention: Some(secs(10)),
            ..WorkerConfig::events_inbox_defaults()
        };
        assert_eq!(c, expected);
    }

    #[test]
    fn a_subscriber_timeout_overrides_the_group() {
        let c = WorkerConfig::events_inbox_defaults() // PT5M, lease PT20S
            .handler_timeout(secs(10))
            .handler_timeout_for("quick", secs(2))
            .handler_timeout_for("long", secs(60));
        assert_eq!(c.effective_handler_timeout(Some("quick")), secs(2));
        assert_eq!(c.effective_handler_timeout(Some("other")), secs(10));
        assert_eq!(c.effective_handler_timeout(None), secs(10));
        assert_eq!(
            c.effective_handler_timeout(Some("long")),
            secs(60),
            "not capped by lock-at-most-for: the lease is renewed"
        );
        let defaults = WorkerConfig::events_inbox_defaults();
        assert_eq!(defaults.effective_handler_timeout(None), secs(300));
    }

    #[test]
    fn backoff_grows_exponentially_until_the_cap() {
        let c = WorkerConfig::events_inbox_defaults();
        let delays: Vec<_> = (1..=10).map(|n| c.backoff(n, 0.0)).collect();
        let expected = [1, 2, 4, 8, 16, 32, 64, 128, 256, 300].map(secs);
        assert_eq!(delays, expected);
        assert_eq!(
            c.backoff(0, 0.0),
            secs(1),
            "0 is treated as the first retry"
        );
        let linear = c.clone().retry_backoff_multiplier(1.0);
        assert_eq!(linear.backoff(50, 0.0), secs(1));
        let fractional = c.retry_backoff_multiplier(1.5);
        assert_eq!(fractional.backoff(3, 0.0), Duration::from_millis(2_250));
    }

    #[test]
    fn backoff_jitter_stays_within_bounds() {
        let c = WorkerConfig::events_inbox_defaults(); // jitter 0.2
        for retry in [1, 3, 9, 20] {
            let full = c.backoff(retry, 0.0);
            for i in 0..100 {
                let sample = f64::from(i) / 100.0;
                let delay = c.backoff(retry, sample);
                assert!(delay <= full, "retry {retry}, sample {sample}");
                assert!(delay >= full.mul_f64(0.8), "retry {retry}, sample {sample}");
            }
        }
        assert_eq!(c.backoff(1, 0.5), Duration::from_millis(900));
        let no_jitter = c.clone().retry_jitter(0.0);
        assert_eq!(no_jitter.backoff(2, 0.99), secs(2));
        let full_jitter = c.retry_jitter(1.0);
        assert!(full_jitter.backoff(2, 0.999) <= Duration::from_millis(3));
    }

    #[test]
    fn backoff_never_panics() {
        let c = WorkerConfig::events_inbox_defaults();
        assert_eq!(c.backoff(u32::MAX, 0.0), secs(300));
        assert!(c.backoff(u32::MAX, 0.999_999) >= secs(240));
        // Out-of-range samples and unvalidated settings are tolerated.
        assert_eq!(c.backoff(2, f64::NAN), secs(2));
        assert_eq!(c.backoff(2, -3.0), secs(2));
        assert!(c.backoff(2, 7.0) >= Duration::from_millis(1_600));
        let odd = WorkerConfig::events_inbox_defaults()
            .retry_backoff_multiplier(f64::NAN)
            .retry_jitter(f64::INFINITY)
            .retry_backoff_max(Duration::MAX);
        let _ = odd.backoff(u32::MAX, 0.5);
        let huge = WorkerConfig::events_inbox_defaults()
            .retry_backoff_initial(Duration::MAX)
            .retry_backoff_max(Duration::MAX)
            .retry_jitter(0.0);
        assert_eq!(huge.backoff(u32::MAX, 0.0), Duration::MAX);
    }
}
