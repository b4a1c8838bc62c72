//! Configuration of the four worker groups (`events.outbox`, `events.inbox`,
//! `commands.outbox`, `commands.inbox`), the command routing table and the staleness
//! monitor.
//!
//! The configuration is serde data: one struct per group ([`WorkerConfig`], [`Staleness`]),
//! every key its field's name in kebab-case, documented on the field (the README's key
//! reference is generated from those docs). Defaults live in one place: one function per
//! box ([`BoxKind::defaults`]), [`Staleness::default`] and [`Config::default`].
//!
//! Sources, later ones overriding earlier ones:
//! 1. the settings made in code ([`Config::default`], [`Config::development`], the
//!    setters);
//! 2. a TOML file ([`Config::from_toml_file`], [`Config::load`]), in the shape of the
//!    structs (`[events.outbox] batch-size = 100`, `stuck-threshold = "PT5M"`,
//!    `[commands.topics] billing = "billing.commands"`);
//! 3. environment variables ([`Config::apply_env`]): a key's dotted path upper-cased with
//!    `.` and `-` as `_` after `BANDEJA_` (`BANDEJA_EVENTS_INBOX_BATCH_SIZE=10`,
//!    `BANDEJA_STUCK_THRESHOLD=PT10M`, `BANDEJA_STALENESS_PENDING=2h`). A table-valued key
//!    is written as `name=value` pairs separated by commas and replaces the whole table
//!    (`BANDEJA_COMMANDS_TOPICS=billing=billing.commands,shipping=shipping.cmds`,
//!    `BANDEJA_EVENTS_INBOX_HANDLER_TIMEOUTS=notification=10s`). `BANDEJA_LOG` and
//!    `BANDEJA_CONFIG` are reserved for other uses and ignored here; any other `BANDEJA_`
//!    variable is an error. [`keys`] lists every key with its variable.
//!
//! Every source becomes a list of settings laid over the one before (a file's
//! `commands.topics` is merged entry by entry, a file's `handler-timeouts` table replaces
//! the group's table, `handler-timeouts = {}` clearing it; a variable replaces what it
//! names), and the result is read once by serde (errors name the dotted key through
//! `serde_path_to_error`), then validated once.
//!
//! Per-subscriber time limits (inbox groups): the `handler-timeouts` table of a group,
//! subscriber name → duration, overrides `handler-timeout` for that subscriber's handler
//! (`[events.inbox.handler-timeouts] notification = "PT10S"`).
//!
//! # Housekeeping
//!
//! Per group `completion-mode` (`update`, `delete`, `archive`) and `retention` (a duration
//! or `off`), and the `[staleness]` table (`enabled`, `pending`, `processing`,
//! `interval`). With `completion-mode = "delete"` or `"archive"` an inbox still absorbs a
//! redelivered message: each insert records a slim dedup record `(id, subscriber,
//! received_at)` in the ledger `<box>_dedup`, and a pair the ledger holds is never
//! inserted again. Dedup records, like COMPLETED rows, live until `retention` passes (and
//! their row is gone); with no retention they stay. A message redelivered after the
//! retention window is a new message to bandeja and is handled again: make the retention
//! longer than the longest time a broker may redeliver (its own retention or replay
//! window).
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
//! names with different values is a [`ConfigErrorKind::Conflict`], naming both; the same
//! value twice is accepted. Across sources the later one wins, as for any key.
//!
//! Durations are written as ISO-8601 (`PT5S`) or in human form (`5s`), see
//! [`parse_duration`]. Unknown keys and bad values are errors naming the full dotted key
//! (or the variable), so a typo never silently falls back to a default; an error in a file
//! also names the file ([`ConfigError::file`]).
//!
//! # Adding a key
//!
//! - A key of a group (`[events.outbox]` and the three others) touches two places: the
//!   field of [`WorkerConfig`] with its doc (and `#[serde(with = "forms::duration")]`,
//!   `forms::optional_duration` or `forms::timeouts` if it is a duration, an optional
//!   duration or a table of durations), and its default in `WorkerConfig::base`
//!   (`worker.rs`), or in a box's function there when a box differs.
//! - A key of `[staleness]` touches the field of [`Staleness`] with its doc, and its
//!   default in [`Staleness::default`] (`housekeeping.rs`).
//! - A top-level key touches the field of [`Config`], whose doc starts with the dotted key
//!   and a colon (`` `key`: ``, which the README's reference finds it by, see
//!   `reference.rs`); its default in [`Config::default`]; the field of `Document`
//!   (`schema.rs`, the file's shape) and its two conversions there; and the tests that
//!   list the top-level keys by name (`the_keys_are_the_fields_of_the_structs` in
//!   `schema.rs`, the top-level hint in `unknown_toml_keys_are_named_with_their_path` in
//!   `sources/tests.rs`).
//!
//! The rest follows from the field: the setter, the TOML key, the environment variable (in
//! both names), the "did you mean" hints, the bound on durations, the tests' struct
//! literals (they end in `..` a default) and counts (taken from the structs), and the
//! README's reference. A file's table at a table key replaces the table below it, except
//! the keys of `MERGED_TABLES` (`sources.rs`, `commands.topics`), merged entry by entry.
//! A rule between keys goes in `validate.rs`; a table key whose every entry validation
//! refuses in a group shows `—` for that group in the README. Then refresh the README's
//! copy with `UPDATE_README=1 cargo test -p bandeja-core readme`.

/// Declares a configuration struct as written and, beside it, for tests, `FIELD_DOCS`:
/// each field's name and doc lines (the README's key reference is generated from them,
/// see `reference.rs`), and `FIELD_TYPES`: each field's name and type (the tests of
/// `schema.rs` count the durations and tables from them). With `setters;` first, also one builder-style setter per field,
/// documented by the field's doc. A field's doc comes before its other attributes.
macro_rules! settings {
    (setters; $(#[$meta:meta])* pub struct $name:ident { $(
        $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])* pub $field:ident: $ty:ty,
    )* }) => {
        settings! { $(#[$meta])* pub struct $name { $(
            $(#[doc = $doc])* $(#[serde($($serde)*)])* pub $field: $ty,
        )* } }
        impl $name {
            $(
                #[doc = concat!("Sets `", stringify!($field), "`:")]
                #[doc = ""]
                $(#[doc = $doc])*
                #[must_use]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
    ($(#[$meta:meta])* pub struct $name:ident { $(
        $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])* pub $field:ident: $ty:ty,
    )* }) => {
        $(#[$meta])*
        pub struct $name { $(
            $(#[doc = $doc])* $(#[serde($($serde)*)])* pub $field: $ty,
        )* }
        #[cfg(test)]
        impl $name {
            /// Each field's name and doc lines, in declaration order.
            pub(crate) const FIELD_DOCS: &'static [(&'static str, &'static [&'static str])] =
                &[$((stringify!($field), &[$($doc),*])),*];
            /// Each field's name and type as written, in declaration order.
            pub(crate) const FIELD_TYPES: &'static [(&'static str, &'static str)] =
                &[$((stringify!($field), stringify!($ty))),*];
        }
    };
}

mod duration;
mod error;
mod forms;
mod hints;
mod housekeeping;
#[cfg(test)]
mod reference;
mod schema;
mod sources;
mod tree;
mod validate;
mod worker;

pub use duration::{format_duration, parse_duration};
pub use error::{ConfigError, ConfigErrorKind};
pub(crate) use hints::edit_distance;
pub use housekeeping::{CompletionMode, CompletionModes, Staleness};
pub use schema::{keys, Key};
pub use worker::{Enabled, HandlerTransaction, WorkerConfig};

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::record::BoxKind;

/// Largest accepted `batch-size`.
pub const MAX_BATCH_SIZE: usize = 10_000;
/// Largest accepted `max-retries`.
pub const MAX_RETRIES_LIMIT: u32 = 1_000;
/// Prefix of the environment variables read by [`Config::apply_env`].
pub const ENV_PREFIX: &str = "BANDEJA_";
/// Variables starting with [`ENV_PREFIX`] that are reserved for other uses (logging
/// filter and format, configuration file path) and ignored by [`Config::apply_env`].
pub const RESERVED_ENV_VARS: [&str; 3] = ["BANDEJA_LOG", "BANDEJA_LOG_FORMAT", "BANDEJA_CONFIG"];

settings! {
    /// The whole configuration.
    ///
    /// Its serde form is the TOML file's: `stuck-threshold`, `[events.outbox]`,
    /// `[events.inbox]`, `[commands.outbox]`, `[commands.inbox]`, `[commands.topics]`,
    /// `[staleness]`, and the seed's names. Deserializing lays what it reads over
    /// [`Config::default`] (a group's table fills what it leaves out from its box's
    /// defaults) and validates, as [`Config::from_toml_str`] does.
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
        /// `commands.topics`: the broker topic of each target service of commands, a table
        /// of target service name → topic.
        pub command_topics: BTreeMap<String, String>,
        /// `stuck-threshold`: how long a PENDING row may stay unchanged (since its
        /// `last_modified_at`) before it is considered stuck (the status reports count it).
        pub stuck_threshold: Duration,
        /// `[staleness]`: the monitor that marks forgotten rows FAILED (default: off).
        pub staleness: Staleness,
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            stuck_threshold: Duration::from_secs(300),
            events_outbox: BoxKind::OutboxEvents.defaults(),
            events_inbox: BoxKind::InboxEvents.defaults(),
            commands_outbox: BoxKind::OutboxCommands.defaults(),
            commands_inbox: BoxKind::InboxCommands.defaults(),
            command_topics: BTreeMap::new(),
            staleness: Staleness::default(),
        }
    }
}

impl Config {
    /// The defaults, but every worker starts at once (`polling-initial-delay` zero) and
    /// polls every 100 ms (`polling-interval`): for examples, tests and a first program,
    /// where the defaults' 2 to 10 seconds before the first poll look like nothing
    /// happens. Everything else, leases and retries included, is as in
    /// [`Config::default`]. Files and variables can still be laid over it
    /// ([`Config::load_over`]).
    #[must_use]
    pub fn development() -> Config {
        let mut config = Config::default();
        for group in BoxKind::ALL {
            let worker = config.group_mut(group);
            worker.polling_initial_delay = Duration::ZERO;
            worker.polling_interval = Duration::from_millis(100);
        }
        config
    }

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
        let text = sources::Source::toml_text(s, "<string>", None)?;
        sources::load(Config::default(), &[text])
    }

    /// The defaults overlaid by the TOML file at `path`, validated. An unknown key or a bad
    /// value names the file ([`ConfigError::file`]) and the key.
    pub fn from_toml_file(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        Config::default().load_over_with_env(Some(path.as_ref()), std::iter::empty())
    }

    /// Overlays the variables of `vars` whose name starts with `BANDEJA_` (see the module
    /// documentation), then validates. Variables without the prefix and the reserved
    /// `BANDEJA_LOG` and `BANDEJA_CONFIG` are ignored; any other `BANDEJA_` variable is a
    /// [`ConfigErrorKind::UnknownKey`].
    pub fn apply_env<I: IntoIterator<Item = (String, String)>>(
        self,
        vars: I,
    ) -> Result<Config, ConfigError> {
        let env = sources::Source::env(vars)?;
        sources::load(self, &[env])
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
    /// error in the file, or a validation error about a setting only the file set, names
    /// the file ([`ConfigError::file`]) and the key as the file wrote it.
    pub fn load_over_with_env<I: IntoIterator<Item = (String, String)>>(
        self,
        path: Option<&Path>,
        vars: I,
    ) -> Result<Config, ConfigError> {
        let mut layers = Vec::new();
        if let Some(path) = path {
            layers.push(sources::Source::toml_file(path)?);
        }
        layers.push(sources::Source::env(vars)?);
        let config = sources::load(self, &layers)?;
        tracing::debug!(file = ?path, config = ?config, "bandeja configuration loaded");
        Ok(config)
    }
}

/// The `BANDEJA_` variables of this process (those [`Config::apply_process_env`] and
/// [`Config::load`] read), for a caller that filters out variables of its own before
/// [`Config::load_over_with_env`]. A variable whose name or value is not UTF-8 is an error.
pub fn process_env_vars() -> Result<Vec<(String, String)>, ConfigError> {
    sources::process_env()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    // Every key listed, and `..` so that a new key does not break the literal.
    #[allow(clippy::needless_update)]
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
                ..group.defaults()
            };
            assert_eq!(config.group(group), &expected, "{group}");
            assert_eq!(group.defaults(), expected, "{group}");
        }
        assert_eq!(config.stuck_threshold, secs(300));
        assert!(config.command_topics.is_empty());
        assert_eq!(config.validate().ok(), Some(()));
    }

    #[test]
    fn development_starts_at_once_and_polls_often() {
        let config = Config::development();
        for group in BoxKind::ALL {
            let expected = WorkerConfig {
                polling_initial_delay: Duration::ZERO,
                polling_interval: Duration::from_millis(100),
                ..group.defaults()
            };
            assert_eq!(config.group(group), &expected, "{group}");
        }
        let rest = Config {
            events_outbox: BoxKind::OutboxEvents.defaults(),
            events_inbox: BoxKind::InboxEvents.defaults(),
            commands_outbox: BoxKind::OutboxCommands.defaults(),
            commands_inbox: BoxKind::InboxCommands.defaults(),
            ..config.clone()
        };
        assert_eq!(rest, Config::default());
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
    fn command_topics_route_by_service() {
        let config = Config::default().with_command_topic("billing", "billing.commands");
        assert_eq!(config.command_topic("billing"), Some("billing.commands"));
        assert_eq!(config.command_topic("shipping"), None);
    }

    #[test]
    fn config_is_serde_data_in_the_file_shape() {
        let mut config = Config::development().with_command_topic("billing", "billing.commands");
        config.staleness = Staleness::default().enabled(true);
        let text = toml::to_string(&config).map_err(|e| e.to_string());
        let text = text.unwrap_or_default();
        for part in [
            "stuck-threshold = \"PT5M\"",
            "[events.outbox]",
            "polling-interval = \"PT0.1S\"",
            "[commands.topics]",
            "billing = \"billing.commands\"",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert_eq!(Config::from_toml_str(&text).ok(), Some(config.clone()));
        // Deserializing fills a group's missing keys from its box's defaults and validates.
        let partial: Result<Config, _> = toml::from_str("[events.outbox]\nbatch-size = 7\n");
        let expected = Config {
            events_outbox: WorkerConfig::events_outbox_defaults().batch_size(7),
            ..Config::default()
        };
        assert_eq!(partial.map_err(|e| e.to_string()), Ok(expected));
        let invalid: Result<Config, _> = toml::from_str("[events.outbox]\nbatch-size = 0\n");
        let message = invalid.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("events.outbox.batch-size"), "{message}");
    }
}
