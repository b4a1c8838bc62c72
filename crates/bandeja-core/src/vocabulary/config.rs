//! Configuration of the four worker groups (`events.outbox`, `events.inbox`,
//! `commands.outbox`, `commands.inbox`) and the command routing table.
//!
//! Sources, later ones overriding earlier ones:
//! 1. the defaults of the specification ([`Config::default`]);
//! 2. a TOML file ([`Config::from_toml_file`]), whose keys are those of the
//!    specification (`[events.outbox] batch-size = 100`, `stuck-threshold = "PT5M"`,
//!    `[commands.topics] billing = "billing.commands"`);
//! 3. environment variables ([`Config::apply_env`]): `BANDEJA_<GROUP>_<KEY>` where
//!    `GROUP` is `EVENTS_OUTBOX`, `EVENTS_INBOX`, `COMMANDS_OUTBOX` or `COMMANDS_INBOX`
//!    and `KEY` is the key upper-cased with `-` replaced by `_`
//!    (`BANDEJA_EVENTS_INBOX_BATCH_SIZE=10`), plus `BANDEJA_STUCK_THRESHOLD` and
//!    `BANDEJA_COMMANDS_TOPICS=billing=billing.commands,shipping=shipping.cmds` (which
//!    replaces the whole routing table). `BANDEJA_LOG` and `BANDEJA_CONFIG` are reserved
//!    for other uses and ignored here; any other `BANDEJA_` variable is an error.
//!
//! Per-subscriber time limits (inbox groups): the `handler-timeouts` table of a group,
//! subscriber name → duration, overrides `handler-timeout` for that subscriber's handler
//! (`[events.inbox.handler-timeouts] notification = "PT10S"`; in the environment
//! `BANDEJA_EVENTS_INBOX_HANDLER_TIMEOUTS=notification=10s,inventory=2s`, which replaces
//! the whole table). Every limit is capped by the group's `lock-at-most-for`.
//!
//! Housekeeping keys (see *Housekeeping* below): per group
//! `completion-mode` (`update`, `delete`, `archive`) and `retention` (a duration or `off`),
//! and the `[staleness]` table (`enabled`, `pending`, `processing`, `interval`); in the
//! environment `BANDEJA_EVENTS_INBOX_RETENTION`, `BANDEJA_STALENESS_PENDING`...
//!
//! # Housekeeping
//!
//! With `completion-mode = "delete"` or `"archive"` an inbox still absorbs a redelivered
//! message: each insert records a slim dedup record `(id, subscriber, received_at)` in the
//! ledger `<box>_dedup`, and a pair the ledger holds is never inserted again. Dedup
//! records, like COMPLETED rows, live until `retention` passes (and their row is gone);
//! with no retention they stay. A message redelivered after the retention window is a new
//! message to bandeja and is handled again: make the retention longer than the longest
//! time a broker may redeliver (its own retention or replay window).
//!
//! # The seed's names
//!
//! The names of seed 000 (the Java archetype's `application.yml`) are accepted beside
//! bandeja's, so a team can keep the keys it has: `app.events.outbox-processor` is
//! `events.outbox`, `app.events.inbox-processor` is `events.inbox`,
//! `app.commands.outbox-dispatcher` is `commands.outbox`, `app.commands.inbox-processor` is
//! `commands.inbox` (every key of a group works under either name, see [`BoxKind::seed_key`])
//! and `app.commands.topics` is `commands.topics`. In TOML `[app.events.outbox-processor]`
//! then `batch-size = 100`; in the environment the same rule as above,
//! `BANDEJA_APP_EVENTS_OUTBOX_PROCESSOR_BATCH_SIZE=100` and
//! `BANDEJA_APP_COMMANDS_TOPICS=billing=billing.commands`. Any other key under `app` is an
//! unknown key. One source (the file, or the environment) that sets one setting under both
//! names with different values is [`ConfigError::Conflict`], naming both; the same value
//! twice is accepted. Across sources the later one wins, as for any key.
//!
//! Durations are written as ISO-8601 (`PT5S`) or in human form (`5s`), see
//! [`parse_duration`]. Unknown keys and bad values are errors naming the full dotted key
//! (or the variable), so a typo never silently falls back to a default; an error in a file
//! also names the file ([`ConfigError::InFile`]).

mod duration;
mod housekeeping;
mod sources;
mod validate;

pub use duration::{format_duration, parse_duration};
pub use housekeeping::{CompletionMode, CompletionModes, Staleness};
pub(crate) use sources::edit_distance;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use crate::record::BoxKind;

/// Largest accepted `batch-size`.
pub const MAX_BATCH_SIZE: usize = 10_000;
/// Largest accepted `max-retries`.
pub const MAX_RETRIES_LIMIT: u32 = 1_000;
/// Prefix of the environment variables read by [`Config::apply_env`].
pub const ENV_PREFIX: &str = "BANDEJA_";
/// Variables starting with [`ENV_PREFIX`] that are reserved for other uses (logging
/// filter, configuration file path) and ignored by [`Config::apply_env`].
pub const RESERVED_ENV_VARS: [&str; 2] = ["BANDEJA_LOG", "BANDEJA_CONFIG"];

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

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Settings of one worker group.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerConfig {
    /// Whether the worker runs (`enabled`).
    pub enabled: Enabled,
    /// Pause between two polls (`polling-interval`).
    pub polling_interval: Duration,
    /// Pause before the first poll (`polling-initial-delay`).
    pub polling_initial_delay: Duration,
    /// Shortest time a poll holds its lock (`lock-at-least-for`).
    pub lock_at_least_for: Duration,
    /// Longest time a poll holds its lock (`lock-at-most-for`).
    pub lock_at_most_for: Duration,
    /// Messages claimed per poll (`batch-size`).
    pub batch_size: usize,
    /// Retries after the first attempt before a message fails for good (`max-retries`).
    pub max_retries: u32,
    /// How many lease takeovers a row may go through before it is FAILED as one that
    /// stops its workers (`max-takeovers`, default 3). A takeover happens when the worker
    /// holding a row stopped renewing its lease (a crash, a kill, a lost connection); it
    /// is not a failed attempt and does not count toward `max-retries`.
    pub max_takeovers: u32,
    /// Delay before the first retry (`retry-backoff-initial`).
    pub retry_backoff_initial: Duration,
    /// Largest delay between retries (`retry-backoff-max`).
    pub retry_backoff_max: Duration,
    /// Growth factor of the delay from one retry to the next (`retry-backoff-multiplier`).
    pub retry_backoff_multiplier: f64,
    /// Fraction (0..=1) of each delay that is randomized (`retry-jitter`).
    pub retry_jitter: f64,
    /// Time limit of one handler call for inbox groups, of one publish for outbox
    /// groups (`handler-timeout`). A handler is never stopped before it: the worker renews
    /// the lease (`lock-at-most-for`) of work in flight about every third of the lease, so
    /// the limit may be longer than the lease. A handler is stopped earlier only when its
    /// lease could not be renewed and is about to run out (another worker may then take
    /// the row over).
    pub handler_timeout: Duration,
    /// Inbox groups: subscribers with a time limit of their own instead of
    /// `handler-timeout`, by subscriber name (`handler-timeouts`, a table; default: empty).
    /// A name no handler of this process is registered
    /// under makes [`BandejaBuilder::build`](crate::BandejaBuilder::build) fail.
    pub handler_timeouts: BTreeMap<String, Duration>,
    /// Whether messages sharing a partition key are processed in order (`ordered`).
    pub ordered: bool,
    /// Inbox groups: one transaction per message, or one per batch with a savepoint per
    /// handler (`handler-transaction`).
    pub handler_transaction: HandlerTransaction,
    /// What completing a row does with it: keep, delete or archive (`completion-mode`).
    pub completion_mode: CompletionMode,
    /// COMPLETED rows (and inbox dedup records) older than this are purged by a periodic
    /// task; `None` keeps them (`retention`, default `off`).
    pub retention: Option<Duration>,
}

/// How the handlers of an inbox batch are wrapped in transactions.
///
/// Either way a handler's writes commit together with its COMPLETED mark, and a failing
/// handler rolls back only its own work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerTransaction {
    /// The store decides: batches on PostgreSQL (commits are the cost), one per message
    /// on SQLite (one writer: a slow handler must not hold the write lock for a batch).
    Auto,
    /// One transaction per message.
    Message,
    /// One transaction per batch (split over the handler concurrency), a savepoint per
    /// handler, all COMPLETED marks in one statement.
    Batch,
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

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, value: $ty) -> Self {
            self.$name = value;
            self
        }
    )*};
}

impl WorkerConfig {
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

    setters! {
        /// Sets `enabled` (default: `true` for `events.outbox`, `auto` elsewhere).
        enabled: Enabled;
        /// Sets `polling-interval` (default: PT5S for `events.outbox`, PT2S elsewhere).
        polling_interval: Duration;
        /// Sets `polling-initial-delay` (default: PT2S for `events.outbox`, PT10S elsewhere).
        polling_initial_delay: Duration;
        /// Sets `lock-at-least-for` (default: PT10S for `events.outbox`, PT5S elsewhere).
        lock_at_least_for: Duration;
        /// Sets `lock-at-most-for` (default: PT30S for `events.outbox`, PT20S elsewhere).
        lock_at_most_for: Duration;
        /// Sets `batch-size`, 1 to 10000 (default: 100 for `events.outbox`, 50 elsewhere).
        batch_size: usize;
        /// Sets `max-retries`, at most 1000 (default: 3).
        max_retries: u32;
        /// Sets `max-takeovers` (default: 3).
        max_takeovers: u32;
        /// Sets `retry-backoff-initial` (default: PT1S).
        retry_backoff_initial: Duration;
        /// Sets `retry-backoff-max` (default: PT5M).
        retry_backoff_max: Duration;
        /// Sets `retry-backoff-multiplier`, at least 1.0 (default: 2.0).
        retry_backoff_multiplier: f64;
        /// Sets `retry-jitter`, between 0.0 and 1.0 (default: 0.2).
        retry_jitter: f64;
        /// Sets `handler-timeout` (default: PT30S, the publish timeout, for outbox groups;
        /// PT5M for inbox groups).
        handler_timeout: Duration;
        /// Sets `handler-timeouts`, every per-subscriber time limit at once (default: none).
        handler_timeouts: BTreeMap<String, Duration>;
        /// Sets `ordered`, per-partition-key ordering (default: `true`).
        ordered: bool;
        /// Sets `handler-transaction` (default: `auto`).
        handler_transaction: HandlerTransaction;
        /// Sets `completion-mode` (default: `update`).
        completion_mode: CompletionMode;
        /// Sets `retention` (default: `None`, keep COMPLETED rows).
        retention: Option<Duration>;
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

/// The whole configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `events.outbox`.
    pub events_outbox: WorkerConfig,
    /// `events.inbox`.
    pub events_inbox: WorkerConfig,
    /// `commands.outbox`.
    pub commands_outbox: WorkerConfig,
    /// `commands.inbox`.
    pub commands_inbox: WorkerConfig,
    /// `commands.topics`: target service name → broker topic (default: empty).
    pub command_topics: BTreeMap<String, String>,
    /// `stuck-threshold`: how long a PENDING row may stay unchanged (since its
    /// `last_modified_at`) before it is considered stuck (default: PT5M).
    pub stuck_threshold: Duration,
    /// `[staleness]`: the monitor that marks forgotten rows FAILED (default: off).
    pub staleness: Staleness,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            events_outbox: WorkerConfig::events_outbox_defaults(),
            events_inbox: WorkerConfig::events_inbox_defaults(),
            commands_outbox: WorkerConfig::commands_outbox_defaults(),
            commands_inbox: WorkerConfig::commands_inbox_defaults(),
            command_topics: BTreeMap::new(),
            stuck_threshold: Duration::from_secs(300),
            staleness: Staleness::default(),
        }
    }
}

impl Config {
    /// The settings of one group.
    #[must_use]
    pub fn group(&self, g: BoxKind) -> &WorkerConfig {
        match g {
            BoxKind::OutboxEvents => &self.events_outbox,
            BoxKind::InboxEvents => &self.events_inbox,
            BoxKind::OutboxCommands => &self.commands_outbox,
            BoxKind::InboxCommands => &self.commands_inbox,
        }
    }

    /// The settings of one group, for changing them.
    pub fn group_mut(&mut self, g: BoxKind) -> &mut WorkerConfig {
        match g {
            BoxKind::OutboxEvents => &mut self.events_outbox,
            BoxKind::InboxEvents => &mut self.events_inbox,
            BoxKind::OutboxCommands => &mut self.commands_outbox,
            BoxKind::InboxCommands => &mut self.commands_inbox,
        }
    }

    /// Routes commands for `target_service` to the broker topic `topic`.
    #[must_use]
    pub fn with_command_topic(
        mut self,
        target_service: impl Into<String>,
        topic: impl Into<String>,
    ) -> Self {
        self.command_topics
            .insert(target_service.into(), topic.into());
        self
    }

    /// The broker topic for a command's target service, if routed.
    #[must_use]
    pub fn command_topic(&self, target_service: &str) -> Option<&str> {
        self.command_topics.get(target_service).map(String::as_str)
    }

    /// The defaults overlaid by the TOML document `s`, validated.
    pub fn from_toml_str(s: &str) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let written = sources::overlay_toml_text(&mut config, s, "<string>")?;
        config
            .validate()
            .map_err(|e| sources::attribute(e, None, &written, &sources::Written::default()))?;
        Ok(config)
    }

    /// The defaults overlaid by the TOML file at `path`, validated. An unknown key or a bad
    /// value is [`ConfigError::InFile`], naming the file and the key.
    pub fn from_toml_file(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        Config::default().load_over_with_env(Some(path.as_ref()), std::iter::empty())
    }

    /// Overlays the variables of `vars` whose name starts with `BANDEJA_` (see the module
    /// documentation), in name order, then validates. Variables without the prefix and
    /// the reserved `BANDEJA_LOG` and `BANDEJA_CONFIG` are ignored; any other `BANDEJA_`
    /// variable is [`ConfigError::UnknownKey`].
    pub fn apply_env<I: IntoIterator<Item = (String, String)>>(
        mut self,
        vars: I,
    ) -> Result<Config, ConfigError> {
        sources::overlay_env(&mut self, vars)?;
        self.validate()?;
        Ok(self)
    }

    /// [`Config::apply_env`] with the variables of this process.
    pub fn apply_process_env(self) -> Result<Config, ConfigError> {
        self.apply_env(sources::process_env()?)
    }

    /// The defaults, then the file (if given), then the environment, validated once at the
    /// end: the usual startup entry point. The path is the caller's choice (a command-line
    /// flag such as `--config`, or the reserved `BANDEJA_CONFIG` variable, which this
    /// function does not read itself).
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        Config::default().load_over(path)
    }

    /// [`Config::load`] over `self` instead of the defaults: settings an application made
    /// in code, then the file (if given), then the process's `BANDEJA_` variables.
    pub fn load_over(self, path: Option<&Path>) -> Result<Config, ConfigError> {
        self.load_over_with_env(path, sources::process_env()?)
    }

    /// `self`, overlaid by the TOML file at `path` (if given), then by the `BANDEJA_`
    /// variables of `vars` (as [`Config::apply_env`]), validated once at the end. An
    /// error in the file, or a validation error about a setting only the file set, is
    /// [`ConfigError::InFile`] (naming the key as the file wrote it).
    pub fn load_over_with_env<I: IntoIterator<Item = (String, String)>>(
        mut self,
        path: Option<&Path>,
        vars: I,
    ) -> Result<Config, ConfigError> {
        let from_file = match path {
            Some(path) => sources::read_toml_file(&mut self, path)?,
            None => sources::Written::default(),
        };
        let from_env = sources::overlay_env(&mut self, vars)?;
        self.validate()
            .map_err(|e| sources::attribute(e, path, &from_file, &from_env))?;
        tracing::debug!(file = ?path, config = ?self, "bandeja configuration loaded");
        Ok(self)
    }
}

/// The `BANDEJA_` variables of this process (those [`Config::apply_process_env`] and
/// [`Config::load`] read), for a caller that filters out variables of its own before
/// [`Config::load_over_with_env`]. A variable whose name or value is not UTF-8 is an error.
pub fn process_env_vars() -> Result<Vec<(String, String)>, ConfigError> {
    sources::process_env()
}

/// A configuration that cannot be used. Every variant names the offending key: the full
/// dotted path (e.g. `events.outbox.batch-size`) or the environment variable name.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A key that bandeja does not know, most likely a typo.
    #[error("unknown configuration key `{key}`{}", sources::unknown_key_hint(.key))]
    UnknownKey {
        /// The dotted key or the environment variable name.
        key: String,
    },
    /// A value of the wrong type, out of range, or inconsistent with another setting.
    #[error("invalid value `{value}` for `{key}`: {reason}")]
    InvalidValue {
        /// The dotted key or the environment variable name.
        key: String,
        /// The offending value, as written.
        value: String,
        /// What is wrong and what is expected.
        reason: String,
    },
    /// The configuration file cannot be read (the source error says why).
    #[error("cannot read configuration file `{}`", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The configuration is not well-formed TOML. The message names the origin; the
    /// source error has the line, column and what was expected.
    #[error("malformed TOML in {path_or_origin}")]
    Parse {
        /// The file path, or a description of where the text came from.
        path_or_origin: String,
        /// The cause.
        #[source]
        source: toml::de::Error,
    },
    /// One setting written under both its names (bandeja's and seed 000's, e.g.
    /// `events.outbox.batch-size` and `app.events.outbox-processor.batch-size`) in one
    /// source, with different values.
    #[error(
        "`{key}` and `{other_key}` are one setting (one is the seed's name of the other) \
         written with different values, `{value}` and `{other_value}`: keep one of them"
    )]
    Conflict {
        /// One of the names, as written (a dotted key or a variable).
        key: String,
        /// Its value, as written.
        value: String,
        /// The other name, as written.
        other_key: String,
        /// Its value, as written.
        other_value: String,
    },
    /// An error in a configuration file: which file, then what is wrong there.
    #[error("in configuration file `{}`: {error}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong in it ([`ConfigError::UnknownKey`], [`ConfigError::InvalidValue`]
        /// or [`ConfigError::Conflict`]).
        error: Box<ConfigError>,
    },
}

impl ConfigError {
    /// The key (or variable) this error names, looking through [`ConfigError::InFile`];
    /// for a conflict, the first of the two names. `None` for I/O and syntax errors.
    #[must_use]
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { key }
            | ConfigError::InvalidValue { key, .. }
            | ConfigError::Conflict { key, .. } => Some(key),
            ConfigError::InFile { error, .. } => error.key(),
            ConfigError::Io { .. } | ConfigError::Parse { .. } => None,
        }
    }

    /// The message followed by its causes (why a file could not be read, where its TOML
    /// is malformed), for a program that prints one line and exits: the error's own
    /// `Display` leaves those to [`std::error::Error::source`].
    #[must_use]
    pub fn full_message(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(error) = cause {
            text.push_str(": ");
            text.push_str(error.to_string().trim_end());
            cause = error.source();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn defaults_match_the_specification() {
        // (group, enabled, polling, initial delay, least, most, batch, handler timeout)
        let table = [
            (BoxKind::OutboxEvents, Enabled::On, 5, 2, 10, 30, 100, 30),
            (BoxKind::InboxEvents, Enabled::Auto, 2, 10, 5, 20, 50, 300),
            (BoxKind::OutboxCommands, Enabled::Auto, 2, 10, 5, 20, 50, 30),
            (BoxKind::InboxCommands, Enabled::Auto, 2, 10, 5, 20, 50, 300),
        ];
        let config = Config::default();
        for (group, enabled, polling, delay, least, most, batch, timeout) in table {
            let expected = WorkerConfig {
                enabled,
                polling_interval: secs(polling),
                polling_initial_delay: secs(delay),
                lock_at_least_for: secs(least),
                lock_at_most_for: secs(most),
                batch_size: batch,
                max_retries: 3,
                max_takeovers: 3,
                retry_backoff_initial: secs(1),
                retry_backoff_max: secs(300),
                retry_backoff_multiplier: 2.0,
                retry_jitter: 0.2,
                handler_timeout: secs(timeout),
                handler_timeouts: BTreeMap::new(),
                ordered: true,
                handler_transaction: HandlerTransaction::Auto,
                completion_mode: CompletionMode::Update,
                retention: None,
            };
            assert_eq!(config.group(group), &expected, "{group}");
            assert_eq!(group.defaults(), expected, "{group}");
        }
        assert_eq!(config.stuck_threshold, secs(300));
        assert!(config.command_topics.is_empty());
        assert_eq!(config.validate().ok(), Some(()));
    }

    #[test]
    fn full_messages_carry_the_cause() {
        let missing =
            std::env::temp_dir().join(format!("bandeja-none-{}.toml", uuid::Uuid::new_v4()));
        let error = Config::from_toml_file(&missing).err();
        let message = error.map(|e| e.full_message()).unwrap_or_default();
        assert!(
            message.contains("cannot read configuration file"),
            "{message}"
        );
        assert!(message.contains("No such file"), "{message}");
        let error = Config::from_toml_str("[events.outbox\n").err();
        let message = error.map(|e| e.full_message()).unwrap_or_default();
        assert!(
            message.contains("malformed TOML in <string>: "),
            "{message}"
        );
        assert!(message.contains("line 1"), "{message}");
    }

    #[test]
    fn groups_have_their_keys_and_fields() {
        let keys: Vec<_> = BoxKind::ALL.iter().map(|g| g.key()).collect();
        let expected = [
            "events.outbox",
            "events.inbox",
            "commands.outbox",
            "commands.inbox",
        ];
        assert_eq!(keys, expected);
        assert_eq!(BoxKind::InboxCommands.key(), "commands.inbox");
        let mut config = Config::default();
        for (i, g) in BoxKind::ALL.into_iter().enumerate() {
            config.group_mut(g).batch_size = i + 1;
        }
        assert_eq!(config.events_outbox.batch_size, 1);
        assert_eq!(config.events_inbox.batch_size, 2);
        assert_eq!(config.commands_outbox.batch_size, 3);
        assert_eq!(config.commands_inbox.batch_size, 4);
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
    fn command_topics_route_by_service() {
        let config = Config::default().with_command_topic("billing", "billing.commands");
        assert_eq!(config.command_topic("billing"), Some("billing.commands"));
        assert_eq!(config.command_topic("shipping"), None);
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
