//! Settings of what happens to rows after they are done with: the completion mode and the
//! retention of each box, and the staleness monitor that marks forgotten rows FAILED.
//!
//! - `<group>.completion-mode`: `update` (default: the row stays, COMPLETED), `delete` (the
//!   row is removed in the statement that completes it) or `archive` (it is moved into
//!   `<box>_archive` in that statement). In an inbox, `delete` and `archive` keep a slim
//!   dedup record `(id, subscriber, received_at)` per message in the ledger `<box>_dedup`,
//!   written by the insert, so a redelivered message is still absorbed once its row is
//!   gone.
//! - `<group>.retention`: a duration, or `off` (the default). A periodic task deletes the
//!   COMPLETED rows completed longer ago than that (and the ledger records received longer
//!   ago whose row is gone). The retention is the inbox's dedup window: a message
//!   redelivered after it is a new message and is handled again (see
//!   `docs/operations.md`).
//! - `[staleness]` `enabled` (default `false`), `pending` (PT1H), `processing` (PT1H),
//!   `interval` (PT1M): every `interval`, in a box that made no progress for the
//!   threshold, PENDING rows due for longer than `pending` that head their partition key
//!   and PROCESSING rows whose lease ran out more than `processing` ago are marked FAILED,
//!   with a reason naming the threshold (see `maintenance::staleness`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::record::BoxKind;

use super::{forms, Config};

/// What the statement that completes a row does with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CompletionMode {
    /// Keep the row, COMPLETED, with its `completed_at` (`update`, the default).
    #[default]
    Update,
    /// Remove the row (`delete`). Inboxes keep a dedup record.
    Delete,
    /// Move the row into `<box>_archive` (`archive`). Inboxes keep a dedup record.
    Archive,
}

impl CompletionMode {
    /// The three modes, in documentation order.
    pub const ALL: [CompletionMode; 3] = [
        CompletionMode::Update,
        CompletionMode::Delete,
        CompletionMode::Archive,
    ];

    /// The configuration value: `update`, `delete` or `archive`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            CompletionMode::Update => "update",
            CompletionMode::Delete => "delete",
            CompletionMode::Archive => "archive",
        }
    }
}

impl FromStr for CompletionMode {
    type Err = String;

    /// Accepts `update`, `delete` or `archive`, case-insensitively.
    fn from_str(s: &str) -> Result<Self, String> {
        let wanted = s.trim().to_ascii_lowercase();
        CompletionMode::ALL
            .into_iter()
            .find(|m| m.as_str() == wanted)
            .ok_or_else(|| "expected `update`, `delete` or `archive`".to_owned())
    }
}

impl fmt::Display for CompletionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The completion mode of each of the four boxes, as a store is configured with
/// ([`Store::with_completion`](crate::Store::with_completion)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompletionModes {
    modes: [CompletionMode; 4],
}

impl CompletionModes {
    /// The mode of `box_kind`.
    #[must_use]
    pub fn of(&self, box_kind: BoxKind) -> CompletionMode {
        self.modes[box_kind.index()]
    }

    /// Sets the mode of `box_kind`.
    #[must_use]
    pub fn with(mut self, box_kind: BoxKind, mode: CompletionMode) -> Self {
        self.modes[box_kind.index()] = mode;
        self
    }

    /// Whether every box keeps its rows (`update`), which every store supports.
    #[must_use]
    pub fn all_update(&self) -> bool {
        self.modes.iter().all(|m| *m == CompletionMode::Update)
    }
}

settings! {
    setters;
    /// The staleness monitor (`[staleness]`), off by default.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
    pub struct Staleness {
        /// Whether the staleness monitor runs.
        pub enabled: bool,
        /// A PENDING row due for longer than this without being claimed, heading its
        /// partition key, in a box that completed nothing for as long, is marked FAILED.
        #[serde(with = "forms::duration")]
        pub pending: Duration,
        /// A PROCESSING row whose lease ran out longer ago than this without being taken
        /// over, in a box that made no progress for as long, is marked FAILED (one under a
        /// live lease never is); longer than every `lock-at-most-for`.
        #[serde(with = "forms::duration")]
        pub processing: Duration,
        /// How often the staleness monitor looks.
        #[serde(with = "forms::duration")]
        pub interval: Duration,
    }
}

impl Default for Staleness {
    fn default() -> Self {
        Staleness {
            enabled: false,
            pending: Duration::from_secs(3_600),
            processing: Duration::from_secs(3_600),
            interval: Duration::from_secs(60),
        }
    }
}

impl Config {
    /// The completion mode of every box, for [`Store::with_completion`](crate::Store::with_completion).
    #[must_use]
    pub fn completion_modes(&self) -> CompletionModes {
        BoxKind::ALL
            .into_iter()
            .fold(CompletionModes::default(), |modes, b| {
                modes.with(b, self.group(b).completion_mode)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigError, ConfigErrorKind, WorkerConfig};

    fn env(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        Config::default().apply_env(vars)
    }

    fn invalid(result: Result<Config, ConfigError>) -> (String, String, String) {
        match result {
            Err(e) if e.kind() == ConfigErrorKind::InvalidValue => (
                e.key().unwrap_or_default().to_owned(),
                e.value().unwrap_or_default().to_owned(),
                e.reason().unwrap_or_default().to_owned(),
            ),
            other => panic!("expected InvalidValue, got {other:?}"),
        }
    }

    #[test]
    // Every key listed, and `..` so that a new key does not break the literal.
    #[allow(clippy::needless_update)]
    fn defaults_keep_rows_forever_and_the_monitor_off() {
        let config = Config::default();
        for group in BoxKind::ALL {
            assert_eq!(config.group(group).completion_mode, CompletionMode::Update);
            assert_eq!(config.group(group).retention, None);
        }
        assert!(config.completion_modes().all_update());
        let staleness = Staleness {
            enabled: false,
            pending: Duration::from_secs(3_600),
            processing: Duration::from_secs(3_600),
            interval: Duration::from_secs(60),
            ..Staleness::default()
        };
        assert_eq!(config.staleness, staleness);
    }

    #[test]
    fn completion_modes_parse_case_insensitively() {
        for mode in CompletionMode::ALL {
            assert_eq!(mode.as_str().parse(), Ok(mode));
            assert_eq!(mode.as_str().to_uppercase().parse(), Ok(mode));
            assert_eq!(mode.to_string(), mode.as_str());
        }
        assert!("remove".parse::<CompletionMode>().is_err());
    }

    #[test]
    // Every key listed, and `..` so that a new key does not break the literal.
    #[allow(clippy::needless_update)]
    fn toml_sets_completion_retention_and_staleness() {
        let text = r#"
            [events.outbox]
            completion-mode = "delete"
            retention = "P7D"
            [events.inbox]
            completion-mode = "ARCHIVE"
            retention = "off"
            [commands.inbox]
            retention = "36h"
            [staleness]
            enabled = true
            pending = "PT2H"
            processing = "30m"
            interval = "PT10S"
        "#;
        let config = Config::from_toml_str(text).map_err(|e| e.to_string());
        let mut expected = Config::default();
        expected.events_outbox.completion_mode = CompletionMode::Delete;
        expected.events_outbox.retention = Some(Duration::from_secs(7 * 86_400));
        expected.events_inbox.completion_mode = CompletionMode::Archive;
        expected.commands_inbox.retention = Some(Duration::from_secs(36 * 3_600));
        expected.staleness = Staleness {
            enabled: true,
            pending: Duration::from_secs(7_200),
            processing: Duration::from_secs(1_800),
            interval: Duration::from_secs(10),
            ..Staleness::default()
        };
        assert_eq!(config, Ok(expected.clone()));
        let modes = expected.completion_modes();
        assert_eq!(modes.of(BoxKind::OutboxEvents), CompletionMode::Delete);
        assert_eq!(modes.of(BoxKind::InboxEvents), CompletionMode::Archive);
        assert_eq!(modes.of(BoxKind::InboxCommands), CompletionMode::Update);
        assert!(!modes.all_update());
    }

    #[test]
    // Every key listed, and `..` so that a new key does not break the literal.
    #[allow(clippy::needless_update)]
    fn env_sets_completion_retention_and_staleness() {
        let config = env(&[
            ("BANDEJA_COMMANDS_OUTBOX_COMPLETION_MODE", "archive"),
            ("BANDEJA_EVENTS_INBOX_RETENTION", "PT12H"),
            ("BANDEJA_STALENESS_ENABLED", "yes"),
            ("BANDEJA_STALENESS_PENDING", "5m"),
            ("BANDEJA_STALENESS_PROCESSING", "PT10M"),
            ("BANDEJA_STALENESS_INTERVAL", "30s"),
        ]);
        let mut expected = Config::default();
        expected.commands_outbox.completion_mode = CompletionMode::Archive;
        expected.events_inbox.retention = Some(Duration::from_secs(43_200));
        expected.staleness = Staleness {
            enabled: true,
            pending: Duration::from_secs(300),
            processing: Duration::from_secs(600),
            interval: Duration::from_secs(30),
            ..Staleness::default()
        };
        assert_eq!(config.map_err(|e| e.to_string()), Ok(expected));
        // `off` in the environment turns off a retention set by a file.
        let file = Config::from_toml_str("[events.inbox]\nretention = \"1d\"").ok();
        let vars = [(
            "BANDEJA_EVENTS_INBOX_RETENTION".to_owned(),
            "off".to_owned(),
        )];
        let layered = file.and_then(|c| c.apply_env(vars).ok());
        assert_eq!(layered.map(|c| c.events_inbox.retention), Some(None));
    }

    #[test]
    fn bad_values_name_their_key() {
        let cases: [(Result<Config, ConfigError>, &str, &str); 9] = [
            (
                Config::from_toml_str("[events.inbox]\ncompletion-mode = \"remove\""),
                "events.inbox.completion-mode",
                "expected `update`, `delete` or `archive`",
            ),
            (
                Config::from_toml_str("[events.inbox]\ncompletion-mode = true"),
                "events.inbox.completion-mode",
                "expected `update`, `delete` or `archive`",
            ),
            (
                Config::from_toml_str("[events.inbox]\nretention = 3600"),
                "events.inbox.retention",
                "a bare number has no unit",
            ),
            (
                Config::from_toml_str("[events.inbox]\nretention = \"PT0S\""),
                "events.inbox.retention",
                "greater than zero; write `off`",
            ),
            (
                env(&[("BANDEJA_COMMANDS_INBOX_RETENTION", "forever")]),
                "BANDEJA_COMMANDS_INBOX_RETENTION",
                "or `off`",
            ),
            (
                Config::from_toml_str("[staleness]\nenabled = \"sometimes\""),
                "staleness.enabled",
                "`true` or `false`",
            ),
            (
                Config::from_toml_str("[staleness]\npending = \"PT0S\""),
                "staleness.pending",
                "greater than zero",
            ),
            (
                Config::from_toml_str("[staleness]\nenabled = true\nprocessing = \"10s\""),
                "staleness.processing",
                "longer than events.outbox.lock-at-most-for (PT30S)",
            ),
            (
                env(&[("BANDEJA_STALENESS_INTERVAL", "0s")]),
                "staleness.interval",
                "greater than zero",
            ),
        ];
        for (result, key, reason) in cases {
            let (found, _, message) = invalid(result);
            assert_eq!(found, key);
            assert!(message.contains(reason), "{key}: {message}");
        }
    }

    #[test]
    fn unknown_staleness_keys_are_named() {
        match Config::from_toml_str("[staleness]\npendng = \"1h\"") {
            Err(e) if e.kind() == ConfigErrorKind::UnknownKey => {
                let message = e.full_message();
                assert!(message.contains("`staleness.pendng`"), "{message}");
                assert!(
                    message.contains("did you mean `staleness.pending`?"),
                    "{message}"
                );
            }
            other => panic!("expected UnknownKey, got {other:?}"),
        }
        match env(&[("BANDEJA_STALENESS_PENDNG", "1h")]) {
            Err(e) if e.kind() == ConfigErrorKind::UnknownKey => {
                let message = e.full_message();
                assert!(message.contains("BANDEJA_STALENESS_PENDING"), "{message}");
            }
            other => panic!("expected UnknownKey, got {other:?}"),
        }
    }

    #[test]
    fn setters_cover_the_new_keys() {
        let c = WorkerConfig::events_inbox_defaults()
            .completion_mode(CompletionMode::Delete)
            .retention(Some(Duration::from_secs(60)));
        assert_eq!(c.completion_mode, CompletionMode::Delete);
        assert_eq!(c.retention, Some(Duration::from_secs(60)));
        assert_eq!(c.validate("events.inbox").ok(), Some(()));
    }
}
