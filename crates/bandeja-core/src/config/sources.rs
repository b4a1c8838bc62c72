//! Reading the configuration from TOML documents and `BANDEJA_` environment variables.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use toml::Value;

use crate::config::{CompletionMode, HandlerTransaction};

use super::housekeeping::STALENESS_KEYS;
use super::{
    parse_bool, parse_duration, Config, ConfigError, Enabled, Group, WorkerConfig, ENV_PREFIX,
    MAX_BATCH_SIZE, MAX_RETRIES_LIMIT, RESERVED_ENV_VARS,
};

/// Keys of a worker group table, in documentation order.
const GROUP_KEYS: [&str; 18] = [
    "enabled",
    "polling-interval",
    "polling-initial-delay",
    "lock-at-least-for",
    "lock-at-most-for",
    "batch-size",
    "max-retries",
    "max-takeovers",
    "retry-backoff-initial",
    "retry-backoff-max",
    "retry-backoff-multiplier",
    "retry-jitter",
    "handler-timeout",
    "handler-timeouts",
    "ordered",
    "handler-transaction",
    "completion-mode",
    "retention",
];
const ROOT_KEYS: [&str; 4] = ["stuck-threshold", "events", "commands", "staleness"];
pub(super) const STALENESS: &str = "staleness";
pub(super) const TOPICS_KEY: &str = "commands.topics";
const DURATION_HINT: &str = "expected a duration like `PT5S` or `5s`";

/// Overlays a parsed TOML document; keys are checked, values converted, nothing validated.
fn overlay_toml(config: &mut Config, root: &toml::Table) -> Result<(), ConfigError> {
    for (name, value) in root {
        match name.as_str() {
            "stuck-threshold" => config.stuck_threshold = Raw::Toml(value).duration(name)?,
            STALENESS => {
                for (field, value) in as_table(value, name)? {
                    set_staleness(config, field, Raw::Toml(value), &join(name, field))?;
                }
            }
            "events" | "commands" => {
                for (sub, value) in as_table(value, name)? {
                    let key = join(name, sub);
                    if key == TOPICS_KEY {
                        for (service, topic) in as_table(value, &key)? {
                            let Value::String(topic) = topic else {
                                return Err(Raw::Toml(topic).invalid(
                                    &join(&key, service),
                                    "expected a topic name string",
                                ));
                            };
                            config.command_topics.insert(service.clone(), topic.clone());
                        }
                        continue;
                    }
                    let group = Group::ALL.into_iter().find(|g| g.key() == key);
                    let group = group.ok_or_else(|| unknown(key.clone()))?;
                    for (field, value) in as_table(value, &key)? {
                        set_field(
                            config.group_mut(group),
                            field,
                            Raw::Toml(value),
                            &join(&key, field),
                        )?;
                    }
                }
            }
            _ => return Err(unknown(join("", name))),
        }
    }
    Ok(())
}

/// Overlays the `BANDEJA_` variables of `vars` in name order (so the first error reported
/// does not depend on the environment's order); nothing validated.
pub(super) fn overlay_env<I: IntoIterator<Item = (String, String)>>(
    config: &mut Config,
    vars: I,
) -> Result<(), ConfigError> {
    let mut ours: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(name, _)| {
            name.starts_with(ENV_PREFIX) && !RESERVED_ENV_VARS.contains(&name.as_str())
        })
        .collect();
    ours.sort();
    for (name, value) in &ours {
        let rest = name.strip_prefix(ENV_PREFIX).unwrap_or(name);
        match rest {
            "STUCK_THRESHOLD" => config.stuck_threshold = Raw::Env(value).duration(name)?,
            "COMMANDS_TOPICS" => config.command_topics = parse_topics(name, value)?,
            _ if rest.starts_with("STALENESS_") => {
                let part = rest.trim_start_matches("STALENESS_");
                let field = STALENESS_KEYS.into_iter().find(|k| env_key(k) == part);
                let field = field.ok_or_else(|| unknown(name.clone()))?;
                set_staleness(config, field, Raw::Env(value), name)?;
            }
            _ => {
                let target = Group::ALL.into_iter().find_map(|g| {
                    let part = rest
                        .strip_prefix(env_group(g).as_str())?
                        .strip_prefix('_')?;
                    GROUP_KEYS
                        .into_iter()
                        .find(|k| env_key(k) == part)
                        .map(|field| (g, field))
                });
                let (group, field) = target.ok_or_else(|| unknown(name.clone()))?;
                set_field(config.group_mut(group), field, Raw::Env(value), name)?;
            }
        }
    }
    Ok(())
}

/// A value from TOML or from an environment variable.
#[derive(Clone, Copy)]
enum Raw<'a> {
    Toml(&'a Value),
    Env(&'a str),
}

impl<'a> Raw<'a> {
    fn invalid(self, key: &str, reason: impl Into<String>) -> ConfigError {
        let value = match self {
            Raw::Env(s) => s.to_owned(),
            Raw::Toml(Value::String(s)) => s.clone(),
            Raw::Toml(Value::Table(_)) => "<table>".to_owned(),
            Raw::Toml(other) => other.to_string(),
        };
        invalid(key, &value, reason)
    }

    /// The text of an environment variable or of a TOML string.
    fn text(self) -> Option<&'a str> {
        match self {
            Raw::Env(s) => Some(s),
            Raw::Toml(Value::String(s)) => Some(s),
            Raw::Toml(_) => None,
        }
    }

    fn duration(self, key: &str) -> Result<Duration, ConfigError> {
        let Some(text) = self.text() else {
            let reason = match self {
                Raw::Toml(Value::Integer(_) | Value::Float(_)) => {
                    format!("{DURATION_HINT}, as a string: a bare number has no unit")
                }
                _ => DURATION_HINT.to_owned(),
            };
            return Err(self.invalid(key, reason));
        };
        parse_duration(text).map_err(|e| self.invalid(key, format!("{DURATION_HINT} ({e})")))
    }

    fn integer<T: TryFrom<i64> + FromStr>(self, key: &str, range: &str) -> Result<T, ConfigError> {
        let parsed = match self {
            Raw::Toml(Value::Integer(i)) => T::try_from(*i).ok(),
            Raw::Env(s) => s.trim().parse().ok(),
            Raw::Toml(_) => None,
        };
        parsed.ok_or_else(|| self.invalid(key, format!("expected an integer {range}")))
    }

    fn float(self, key: &str) -> Result<f64, ConfigError> {
        let parsed = match self {
            Raw::Toml(Value::Float(f)) => Some(*f),
            Raw::Toml(Value::Integer(i)) => Some(*i as f64),
            Raw::Env(s) => s.trim().parse().ok(),
            Raw::Toml(_) => None,
        };
        parsed.ok_or_else(|| self.invalid(key, "expected a number"))
    }

    /// A duration, or `off` for none.
    fn optional_duration(self, key: &str) -> Result<Option<Duration>, ConfigError> {
        match self.text() {
            Some(text) if text.trim().eq_ignore_ascii_case("off") => Ok(None),
            _ => self.duration(key).map(Some).map_err(|e| match e {
                ConfigError::InvalidValue { key, value, reason } => ConfigError::InvalidValue {
                    key,
                    value,
                    reason: format!("{reason}, or `off`"),
                },
                other => other,
            }),
        }
    }

    /// `handler-timeouts`: a TOML table of subscriber → duration, or in the environment
    /// `name=duration` pairs separated by commas (blank entries skipped).
    fn timeouts(self, key: &str) -> Result<BTreeMap<String, Duration>, ConfigError> {
        let mut timeouts = BTreeMap::new();
        match self {
            Raw::Toml(Value::Table(table)) => {
                for (subscriber, value) in table {
                    let duration = Raw::Toml(value).duration(&join(key, subscriber))?;
                    timeouts.insert(subscriber.clone(), duration);
                }
            }
            Raw::Toml(_) => {
                return Err(self.invalid(
                    key,
                    "expected a table of subscriber = duration, like `[events.inbox.handler-timeouts]` then `notification = \"PT10S\"`",
                ))
            }
            Raw::Env(value) => {
                for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                    let bad = |reason: String| {
                        self.invalid(
                            key,
                            format!("{reason} in `{entry}`; expected `subscriber=duration` pairs separated by commas"),
                        )
                    };
                    let (subscriber, text) = entry
                        .split_once('=')
                        .ok_or_else(|| bad("missing `=`".to_owned()))?;
                    let subscriber = subscriber.trim();
                    if subscriber.is_empty() {
                        return Err(bad("empty subscriber name".to_owned()));
                    }
                    let duration = parse_duration(text.trim())
                        .map_err(|e| bad(format!("{DURATION_HINT} ({e})")))?;
                    if timeouts.insert(subscriber.to_owned(), duration).is_some() {
                        return Err(bad("subscriber listed twice".to_owned()));
                    }
                }
            }
        }
        Ok(timeouts)
    }

    fn completion_mode(self, key: &str) -> Result<CompletionMode, ConfigError> {
        self.text()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| self.invalid(key, "expected `update`, `delete` or `archive`"))
    }

    fn handler_transaction(self, key: &str) -> Result<HandlerTransaction, ConfigError> {
        self.text()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| self.invalid(key, "expected `auto`, `message` or `batch`"))
    }

    fn boolean(self, key: &str) -> Result<bool, ConfigError> {
        let parsed = match self {
            Raw::Toml(Value::Boolean(b)) => Some(*b),
            Raw::Env(s) => parse_bool(s),
            Raw::Toml(_) => None,
        };
        parsed.ok_or_else(|| self.invalid(key, "expected `true` or `false`"))
    }

    fn enabled(self, key: &str) -> Result<Enabled, ConfigError> {
        match (self, self.text()) {
            (Raw::Toml(Value::Boolean(true)), _) => Ok(Enabled::On),
            (Raw::Toml(Value::Boolean(false)), _) => Ok(Enabled::Off),
            (_, Some(text)) => text.parse().map_err(|e: String| self.invalid(key, e)),
            _ => Err(self.invalid(key, "expected `true`, `false` or `\"auto\"`")),
        }
    }
}

/// Sets the field named by the TOML key `field`; `key` is what errors name.
fn set_field(
    c: &mut WorkerConfig,
    field: &str,
    raw: Raw<'_>,
    key: &str,
) -> Result<(), ConfigError> {
    match field {
        "enabled" => c.enabled = raw.enabled(key)?,
        "polling-interval" => c.polling_interval = raw.duration(key)?,
        "polling-initial-delay" => c.polling_initial_delay = raw.duration(key)?,
        "lock-at-least-for" => c.lock_at_least_for = raw.duration(key)?,
        "lock-at-most-for" => c.lock_at_most_for = raw.duration(key)?,
        "batch-size" => {
            c.batch_size = raw.integer(key, &format!("between 1 and {MAX_BATCH_SIZE}"))?
        }
        "max-retries" => {
            c.max_retries = raw.integer(key, &format!("between 0 and {MAX_RETRIES_LIMIT}"))?
        }
        "max-takeovers" => {
            c.max_takeovers = raw.integer(key, &format!("between 0 and {MAX_RETRIES_LIMIT}"))?
        }
        "retry-backoff-initial" => c.retry_backoff_initial = raw.duration(key)?,
        "retry-backoff-max" => c.retry_backoff_max = raw.duration(key)?,
        "retry-backoff-multiplier" => c.retry_backoff_multiplier = raw.float(key)?,
        "retry-jitter" => c.retry_jitter = raw.float(key)?,
        "handler-timeout" => c.handler_timeout = raw.duration(key)?,
        "handler-timeouts" => c.handler_timeouts = raw.timeouts(key)?,
        "ordered" => c.ordered = raw.boolean(key)?,
        "handler-transaction" => c.handler_transaction = raw.handler_transaction(key)?,
        "completion-mode" => c.completion_mode = raw.completion_mode(key)?,
        "retention" => c.retention = raw.optional_duration(key)?,
        _ => return Err(unknown(key.to_owned())),
    }
    Ok(())
}

/// Sets the `[staleness]` field named by the TOML key `field`; `key` is what errors name.
fn set_staleness(
    config: &mut Config,
    field: &str,
    raw: Raw<'_>,
    key: &str,
) -> Result<(), ConfigError> {
    let s = &mut config.staleness;
    match field {
        "enabled" => s.enabled = raw.boolean(key)?,
        "pending" => s.pending = raw.duration(key)?,
        "processing" => s.processing = raw.duration(key)?,
        "interval" => s.interval = raw.duration(key)?,
        _ => return Err(unknown(key.to_owned())),
    }
    Ok(())
}

fn unknown(key: String) -> ConfigError {
    ConfigError::UnknownKey { key }
}

pub(super) fn invalid(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: reason.into(),
    }
}

/// The defaults overlaid by the TOML document `text` (not validated); `origin` is named
/// by syntax errors.
pub(super) fn parse_toml(text: &str, origin: &str) -> Result<Config, ConfigError> {
    let root: toml::Table = toml::from_str(text).map_err(|source| ConfigError::Parse {
        path_or_origin: origin.to_owned(),
        source,
    })?;
    let mut config = Config::default();
    overlay_toml(&mut config, &root)?;
    Ok(config)
}

/// The defaults overlaid by the TOML file at `path` (not validated).
pub(super) fn read_toml_file(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_toml(&text, &path.display().to_string())
}

/// The group part of environment variables: `EVENTS_OUTBOX` for `events.outbox`.
fn env_group(group: Group) -> String {
    env_key(&group.key().replace('.', "-"))
}

fn as_table<'a>(value: &'a Value, key: &str) -> Result<&'a toml::Table, ConfigError> {
    value
        .as_table()
        .ok_or_else(|| Raw::Toml(value).invalid(key, "expected a table"))
}

/// `parent.key`, quoting `key` when it is not a bare TOML key.
pub(super) fn join(parent: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let key = if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    };
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

fn env_key(field: &str) -> String {
    field.to_ascii_uppercase().replace('-', "_")
}

/// Parses `billing=billing.commands,shipping=shipping.cmds` (blank entries skipped).
pub(super) fn parse_topics(
    name: &str,
    value: &str,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut topics = BTreeMap::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |reason: &str| {
            invalid(
                name,
                value,
                format!(
                    "{reason} in `{entry}`; expected `service=topic` pairs separated by commas"
                ),
            )
        };
        let (service, topic) = entry.split_once('=').ok_or_else(|| bad("missing `=`"))?;
        let (service, topic) = (service.trim(), topic.trim());
        if service.is_empty() || topic.is_empty() {
            return Err(bad("empty service or topic name"));
        }
        if topics
            .insert(service.to_owned(), topic.to_owned())
            .is_some()
        {
            return Err(bad("service listed twice"));
        }
    }
    Ok(topics)
}

/// The `BANDEJA_` variables of this process; non-UTF-8 ones are errors, not panics.
pub(super) fn process_env() -> Result<Vec<(String, String)>, ConfigError> {
    let mut vars = Vec::new();
    for (name, value) in std::env::vars_os() {
        let lossy = name.to_string_lossy().into_owned();
        if !lossy.starts_with(ENV_PREFIX) || RESERVED_ENV_VARS.contains(&lossy.as_str()) {
            continue;
        }
        if name.to_str().is_none() {
            return Err(unknown(lossy));
        }
        let value = value
            .into_string()
            .map_err(|v| invalid(&lossy, &v.to_string_lossy(), "must be valid UTF-8"))?;
        vars.push((lossy, value));
    }
    Ok(vars)
}

/// The keys expected next to an unknown one, with a suggestion for near misses.
pub(super) fn unknown_key_hint(key: &str) -> String {
    let quoted = |names: &[String]| {
        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        names.join(", ")
    };
    // Full candidate names, and how to present them.
    let (candidates, shown) = if let Some(rest) = key.strip_prefix(ENV_PREFIX) {
        if rest.starts_with("STALENESS_") {
            let prefix = format!("{ENV_PREFIX}STALENESS_");
            let leaves: Vec<String> = STALENESS_KEYS.iter().map(|k| env_key(k)).collect();
            let full = leaves.iter().map(|l| format!("{prefix}{l}")).collect();
            (full, format!("{} after `{prefix}`", quoted(&leaves)))
        } else {
            match Group::ALL
                .into_iter()
                .find(|g| rest.starts_with(&env_group(*g)))
            {
                Some(g) => {
                    let prefix = format!("{ENV_PREFIX}{}_", env_group(g));
                    let leaves: Vec<String> = GROUP_KEYS.iter().map(|k| env_key(k)).collect();
                    let full = leaves.iter().map(|l| format!("{prefix}{l}")).collect();
                    (full, format!("{} after `{prefix}`", quoted(&leaves)))
                }
                None => {
                    let mut full: Vec<String> =
                        ["STUCK_THRESHOLD", "COMMANDS_TOPICS", "STALENESS_<KEY>"]
                            .iter()
                            .map(|n| format!("{ENV_PREFIX}{n}"))
                            .collect();
                    let per_group =
                        Group::ALL.map(|g| format!("{ENV_PREFIX}{}_<KEY>", env_group(g)));
                    full.extend(per_group);
                    let shown = quoted(&full);
                    (full, shown)
                }
            }
        }
    } else {
        let (parent, leaves): (&str, &[&str]) = match Group::ALL
            .into_iter()
            .find(|g| key.starts_with(&format!("{}.", g.key())))
        {
            Some(g) => (g.key(), &GROUP_KEYS),
            None if key.starts_with("events.") => ("events", &["outbox", "inbox"]),
            None if key.starts_with("commands.") => ("commands", &["outbox", "inbox", "topics"]),
            None if key.starts_with("staleness.") => (STALENESS, &STALENESS_KEYS),
            None => ("", &ROOT_KEYS),
        };
        let full = leaves.iter().map(|l| join(parent, l)).collect();
        let leaves: Vec<String> = leaves.iter().map(|l| (*l).to_owned()).collect();
        let place = if parent.is_empty() {
            "at the top level".to_owned()
        } else {
            format!("in `{parent}`")
        };
        (full, format!("{} {place}", quoted(&leaves)))
    };
    let suggestion = candidates
        .iter()
        .filter(|c| edit_distance(c, key) <= 2)
        .min_by_key(|c| edit_distance(c, key))
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    format!("{suggestion}; expected one of {shown}")
}

/// Levenshtein distance, for "did you mean" suggestions.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn env(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        Config::default().apply_env(vars)
    }

    /// The key and message of an `UnknownKey`, or a panic naming what came instead.
    fn unknown_key(result: Result<Config, ConfigError>) -> (String, String) {
        match &result {
            Err(e @ ConfigError::UnknownKey { key }) => (key.clone(), e.to_string()),
            other => panic!("expected UnknownKey, got {other:?}"),
        }
    }

    fn invalid_value(result: Result<Config, ConfigError>) -> (String, String, String) {
        match result {
            Err(ConfigError::InvalidValue { key, value, reason }) => (key, value, reason),
            other => panic!("expected InvalidValue, got {other:?}"),
        }
    }

    #[test]
    fn toml_overrides_every_key_of_a_group() {
        let text = r#"
            stuck-threshold = "10m"
            [commands.inbox]
            enabled = false
            polling-interval = "PT1S"
            polling-initial-delay = "500ms"
            lock-at-least-for = "PT1M"
            lock-at-most-for = "2m"
            batch-size = 7
            max-retries = 9
            retry-backoff-initial = "PT0.25S"
            retry-backoff-max = "1h"
            retry-backoff-multiplier = 3
            retry-jitter = 0.5
            handler-timeout = "P1D"
            ordered = false
            handler-transaction = "batch"
            [commands.topics]
            billing = "billing.commands"
        "#;
        let config = Config::from_toml_str(text).map_err(|e| e.to_string());
        let expected = Config {
            commands_inbox: WorkerConfig {
                enabled: Enabled::Off,
                polling_interval: secs(1),
                polling_initial_delay: Duration::from_millis(500),
                lock_at_least_for: secs(60),
                lock_at_most_for: secs(120),
                batch_size: 7,
                max_retries: 9,
                retry_backoff_initial: Duration::from_millis(250),
                retry_backoff_max: secs(3_600),
                retry_backoff_multiplier: 3.0,
                retry_jitter: 0.5,
                handler_timeout: secs(86_400),
                ordered: false,
                handler_transaction: HandlerTransaction::Batch,
                ..WorkerConfig::commands_inbox_defaults()
            },
            stuck_threshold: secs(600),
            ..Config::default().with_command_topic("billing", "billing.commands")
        };
        assert_eq!(config, Ok(expected));
    }

    #[test]
    fn toml_enabled_accepts_bool_and_auto() {
        let text = "[events.outbox]\nenabled = \"auto\"\n[events.inbox]\nenabled = true";
        let config = Config::from_toml_str(text).ok();
        let enabled = config.map(|c| (c.events_outbox.enabled, c.events_inbox.enabled));
        assert_eq!(enabled, Some((Enabled::Auto, Enabled::On)));
        let empty = Config::from_toml_str("[events.outbox]\n[commands.topics]").ok();
        assert_eq!(empty, Some(Config::default()));
    }

    #[test]
    fn unknown_toml_keys_are_named_with_their_path() {
        let cases = [
            (
                "stuck-treshold = \"PT5M\"",
                "stuck-treshold",
                "did you mean `stuck-threshold`?",
            ),
            (
                "[events.outbox]\nbach-size = 3",
                "events.outbox.bach-size",
                "`retention` in `events.outbox`",
            ),
            (
                "[events.outbx]",
                "events.outbx",
                "did you mean `events.outbox`?",
            ),
            (
                "[commands.topicz]",
                "commands.topicz",
                "did you mean `commands.topics`?",
            ),
            (
                "[queries.inbox]",
                "queries",
                "expected one of `stuck-threshold`, `events`, `commands`, `staleness` at the top level",
            ),
            (
                "[events.inbox]\n\"a.b\" = 1",
                "events.inbox.\"a.b\"",
                "`retention` in `events.inbox`",
            ),
        ];
        for (text, key, hint) in cases {
            let (found, message) = unknown_key(Config::from_toml_str(text));
            assert_eq!(found, key, "{text}");
            assert!(
                message.starts_with(&format!("unknown configuration key `{key}`")),
                "{message}"
            );
            assert!(message.contains(hint), "{message}");
        }
    }

    #[test]
    fn bad_toml_values_are_named_with_their_path() {
        let cases = [
            (
                "[events.outbox]\npolling-interval = \"abc\"",
                "events.outbox.polling-interval",
                "expected a duration like `PT5S` or `5s`",
            ),
            (
                "[events.outbox]\npolling-interval = 5",
                "events.outbox.polling-interval",
                "a bare number has no unit",
            ),
            (
                "[events.inbox]\nlock-at-least-for = \"-5s\"",
                "events.inbox.lock-at-least-for",
                "negative",
            ),
            (
                "[events.inbox]\nbatch-size = \"10\"",
                "events.inbox.batch-size",
                "expected an integer",
            ),
            (
                "[events.inbox]\nbatch-size = -1",
                "events.inbox.batch-size",
                "between 1 and 10000",
            ),
            (
                "[events.inbox]\nbatch-size = 1.5",
                "events.inbox.batch-size",
                "expected an integer",
            ),
            (
                "[commands.outbox]\nmax-retries = 5000000000",
                "commands.outbox.max-retries",
                "expected an integer",
            ),
            (
                "[commands.outbox]\nenabled = \"maybe\"",
                "commands.outbox.enabled",
                "auto",
            ),
            (
                "[commands.outbox]\nenabled = 1",
                "commands.outbox.enabled",
                "auto",
            ),
            (
                "[commands.outbox]\nordered = \"yes\"",
                "commands.outbox.ordered",
                "`true` or `false`",
            ),
            (
                "[commands.outbox]\nretry-jitter = \"x\"",
                "commands.outbox.retry-jitter",
                "a number",
            ),
            (
                "[commands.topics]\nbilling = 3",
                "commands.topics.billing",
                "topic name",
            ),
            ("events = 5", "events", "expected a table"),
            (
                "[events]\noutbox = \"fast\"",
                "events.outbox",
                "expected a table",
            ),
            (
                "stuck-threshold = \"PT0S\"",
                "stuck-threshold",
                "greater than zero",
            ),
            (
                "[commands.inbox]\nbatch-size = 0",
                "commands.inbox.batch-size",
                "between 1 and 10000",
            ),
            (
                "[events.outbox]\nlock-at-most-for = \"5s\"",
                "events.outbox.lock-at-most-for",
                "at least lock-at-least-for",
            ),
        ];
        for (text, key, reason_part) in cases {
            let (found, _, reason) = invalid_value(Config::from_toml_str(text));
            assert_eq!(found, key, "{text}");
            assert!(reason.contains(reason_part), "{text}: {reason}");
        }
        let (_, value, _) = invalid_value(Config::from_toml_str(
            "[events.outbox]\npolling-interval = \"abc\"",
        ));
        assert_eq!(value, "abc");
    }

    #[test]
    fn malformed_toml_and_missing_files_are_reported() {
        use std::error::Error as _;
        match Config::from_toml_str("[events.outbox\nbatch-size = 1") {
            Err(e @ ConfigError::Parse { .. }) => {
                assert_eq!(e.to_string(), "malformed TOML in <string>");
                assert!(e.source().is_some_and(|s| s.to_string().contains("line 1")));
            }
            other => panic!("expected Parse, got {other:?}"),
        }
        let name = format!("bandeja-missing-{}.toml", std::process::id());
        let path = std::env::temp_dir().join(name);
        match Config::from_toml_file(&path) {
            Err(e @ ConfigError::Io { .. }) => {
                assert!(matches!(&e, ConfigError::Io { path: p, .. } if *p == path));
                assert!(e.to_string().contains("bandeja-missing-"));
                assert!(e.source().is_some());
            }
            other => panic!("expected Io, got {other:?}"),
        }
    }

    #[test]
    fn toml_files_are_read_and_env_overrides_them() {
        let path = std::env::temp_dir().join(format!("bandeja-config-{}.toml", std::process::id()));
        let written = std::fs::write(&path, "[events.inbox]\nbatch-size = 20\nmax-retries = 5\n");
        assert!(written.is_ok(), "{written:?}");
        let from_file = Config::from_toml_file(&path).map_err(|e| e.to_string());
        let vars = [(
            "BANDEJA_EVENTS_INBOX_BATCH_SIZE".to_owned(),
            "30".to_owned(),
        )];
        let layered = from_file
            .clone()
            .and_then(|c| c.apply_env(vars).map_err(|e| e.to_string()));
        // `load` reads the real environment: only compare when it holds no BANDEJA_ variables.
        let quiet = std::env::vars_os().all(|(k, _)| {
            let k = k.to_string_lossy();
            !k.starts_with(ENV_PREFIX) || RESERVED_ENV_VARS.contains(&k.as_ref())
        });
        if quiet {
            assert_eq!(
                Config::load(Some(&path)).map_err(|e| e.to_string()),
                from_file
            );
            assert_eq!(Config::load(None).ok(), Some(Config::default()));
        }
        let _ = std::fs::remove_file(&path);
        let inbox = from_file
            .as_ref()
            .map(|c| (c.events_inbox.batch_size, c.events_inbox.max_retries));
        assert_eq!(inbox, Ok((20, 5)));
        let inbox = layered.map(|c| (c.events_inbox.batch_size, c.events_inbox.max_retries));
        assert_eq!(inbox, Ok((30, 5)));
    }

    #[test]
    fn env_overlays_values() {
        let config = env(&[
            ("BANDEJA_EVENTS_OUTBOX_POLLING_INTERVAL", "7s"),
            ("BANDEJA_COMMANDS_INBOX_ENABLED", "false"),
            ("BANDEJA_COMMANDS_OUTBOX_ENABLED", "ON"),
            ("BANDEJA_EVENTS_INBOX_ENABLED", "Auto"),
            ("BANDEJA_EVENTS_INBOX_BATCH_SIZE", "10"),
            ("BANDEJA_EVENTS_INBOX_RETRY_BACKOFF_MULTIPLIER", "1.5"),
            ("BANDEJA_EVENTS_INBOX_ORDERED", "no"),
            ("BANDEJA_COMMANDS_INBOX_HANDLER_TIMEOUT", "PT1M"),
            ("BANDEJA_STUCK_THRESHOLD", "PT10M"),
            (
                "BANDEJA_COMMANDS_TOPICS",
                "billing=billing.commands, shipping = shipping.cmds,",
            ),
            ("BANDEJA_LOG", "debug"),
            ("BANDEJA_CONFIG", "/etc/bandeja.toml"),
            ("PATH", "/usr/bin"),
        ]);
        let mut expected = Config::default()
            .with_command_topic("billing", "billing.commands")
            .with_command_topic("shipping", "shipping.cmds");
        expected.events_outbox.polling_interval = secs(7);
        expected.commands_inbox.enabled = Enabled::Off;
        expected.commands_outbox.enabled = Enabled::On;
        expected.events_inbox.batch_size = 10;
        expected.events_inbox.retry_backoff_multiplier = 1.5;
        expected.events_inbox.ordered = false;
        expected.commands_inbox.handler_timeout = secs(60);
        expected.stuck_threshold = secs(600);
        assert_eq!(config.map_err(|e| e.to_string()), Ok(expected));
    }

    #[test]
    fn env_topics_replace_the_table() {
        let base = Config::default().with_command_topic("old", "old.topic");
        let vars = [(
            "BANDEJA_COMMANDS_TOPICS".to_owned(),
            "new=new.topic".to_owned(),
        )];
        let topics = base.clone().apply_env(vars).map(|c| c.command_topics);
        let expected = BTreeMap::from([("new".to_owned(), "new.topic".to_owned())]);
        assert_eq!(topics.ok(), Some(expected));
        let vars = [("BANDEJA_COMMANDS_TOPICS".to_owned(), String::new())];
        assert_eq!(
            base.apply_env(vars).ok().map(|c| c.command_topics.len()),
            Some(0)
        );
        for (value, reason) in [
            ("billing", "missing `=`"),
            ("billing=", "empty service or topic"),
            ("=topic", "empty service or topic"),
            ("a=x,a=y", "listed twice"),
        ] {
            let (key, found, message) = invalid_value(env(&[("BANDEJA_COMMANDS_TOPICS", value)]));
            assert_eq!(
                (key.as_str(), found.as_str()),
                ("BANDEJA_COMMANDS_TOPICS", value)
            );
            assert!(message.contains(reason), "{value}: {message}");
        }
    }

    #[test]
    fn unknown_env_vars_are_named() {
        let cases = [
            (
                "BANDEJA_EVENTS_OUTBOX_BATCHSIZE",
                "did you mean `BANDEJA_EVENTS_OUTBOX_BATCH_SIZE`?",
            ),
            ("BANDEJA_EVENTS_OUTBOX", "`ENABLED`, `POLLING_INTERVAL`"),
            (
                "BANDEJA_STUCK_TRESHOLD",
                "did you mean `BANDEJA_STUCK_THRESHOLD`?",
            ),
            (
                "BANDEJA_QUERIES_INBOX_ENABLED",
                "`BANDEJA_EVENTS_INBOX_<KEY>`",
            ),
            ("BANDEJA_events_outbox_enabled", "`BANDEJA_COMMANDS_TOPICS`"),
            ("BANDEJA_LOGGING", "`BANDEJA_STUCK_THRESHOLD`"),
        ];
        for (name, hint) in cases {
            let (key, message) = unknown_key(env(&[(name, "1")]));
            assert_eq!(key, name);
            assert!(message.contains(hint), "{message}");
        }
    }

    #[test]
    fn bad_env_values_name_the_variable() {
        let cases = [
            (
                "BANDEJA_EVENTS_OUTBOX_POLLING_INTERVAL",
                "5 parsecs",
                "expected a duration",
            ),
            ("BANDEJA_EVENTS_OUTBOX_ENABLED", "maybe", "`auto`"),
            (
                "BANDEJA_EVENTS_OUTBOX_BATCH_SIZE",
                "-1",
                "expected an integer",
            ),
            (
                "BANDEJA_EVENTS_OUTBOX_MAX_RETRIES",
                "many",
                "expected an integer",
            ),
            ("BANDEJA_EVENTS_OUTBOX_RETRY_JITTER", "lots", "a number"),
            ("BANDEJA_EVENTS_OUTBOX_ORDERED", "auto", "`true` or `false`"),
            ("BANDEJA_STUCK_THRESHOLD", "", "empty"),
        ];
        for (name, value, reason) in cases {
            let (key, found, message) = invalid_value(env(&[(name, value)]));
            assert_eq!((key.as_str(), found.as_str()), (name, value));
            assert!(message.contains(reason), "{name}: {message}");
        }
        // Validation runs after the overlay and names the dotted key.
        let zero = env(&[("BANDEJA_EVENTS_INBOX_BATCH_SIZE", "0")]);
        assert_eq!(invalid_value(zero).0, "events.inbox.batch-size");
    }

    #[test]
    fn env_is_applied_in_name_order_and_validated_once() {
        // lock-at-least-for above the default lock-at-most-for is fine once both are set.
        let config = env(&[
            ("BANDEJA_EVENTS_INBOX_LOCK_AT_MOST_FOR", "2m"),
            ("BANDEJA_EVENTS_INBOX_LOCK_AT_LEAST_FOR", "1m"),
        ]);
        let locks = config.map(|c| {
            (
                c.events_inbox.lock_at_least_for,
                c.events_inbox.lock_at_most_for,
            )
        });
        assert_eq!(locks.ok(), Some((secs(60), secs(120))));
    }

    #[test]
    fn handler_timeouts_come_from_toml_and_env() {
        let text = "[events.inbox.handler-timeouts]\nnotification = \"PT10S\"\ninventory = \"2s\"";
        let expected = BTreeMap::from([
            ("inventory".to_owned(), secs(2)),
            ("notification".to_owned(), secs(10)),
        ]);
        let config = Config::from_toml_str(text).map_err(|e| e.to_string());
        assert_eq!(
            config.map(|c| c.events_inbox.handler_timeouts),
            Ok(expected.clone())
        );
        let value = "notification=10s, inventory = PT2S,";
        let config = env(&[("BANDEJA_EVENTS_INBOX_HANDLER_TIMEOUTS", value)]);
        let timeouts = config.map(|c| c.events_inbox.handler_timeouts);
        assert_eq!(timeouts.map_err(|e| e.to_string()), Ok(expected));
        // The environment replaces the whole table.
        let mut base = Config::default();
        base.commands_inbox = base.commands_inbox.handler_timeout_for("old", secs(1));
        let vars = [(
            "BANDEJA_COMMANDS_INBOX_HANDLER_TIMEOUTS".to_owned(),
            "billing=3s".to_owned(),
        )];
        let replaced = base
            .apply_env(vars)
            .map(|c| c.commands_inbox.handler_timeouts);
        let expected = BTreeMap::from([("billing".to_owned(), secs(3))]);
        assert_eq!(replaced.ok(), Some(expected));
    }

    #[test]
    fn bad_handler_timeouts_name_the_key() {
        let toml_cases = [
            (
                "[events.inbox]\nhandler-timeouts = \"10s\"",
                "events.inbox.handler-timeouts",
                "expected a table of subscriber = duration",
            ),
            (
                "[events.inbox.handler-timeouts]\nslow = 5",
                "events.inbox.handler-timeouts.slow",
                "a bare number has no unit",
            ),
            (
                "[events.inbox.handler-timeouts]\nslow = \"0s\"",
                "events.inbox.handler-timeouts.slow",
                "greater than zero",
            ),
            (
                "[commands.outbox.handler-timeouts]\nslow = \"1s\"",
                "commands.outbox.handler-timeouts.slow",
                "an outbox has no subscribers",
            ),
        ];
        for (text, key, reason_part) in toml_cases {
            let (found, _, reason) = invalid_value(Config::from_toml_str(text));
            assert_eq!(found, key, "{text}");
            assert!(reason.contains(reason_part), "{text}: {reason}");
        }
        let name = "BANDEJA_EVENTS_INBOX_HANDLER_TIMEOUTS";
        for (value, reason_part) in [
            ("slow", "missing `=`"),
            ("=1s", "empty subscriber name"),
            ("slow=soon", "expected a duration"),
            ("slow=1s,slow=2s", "listed twice"),
        ] {
            let (key, found, reason) = invalid_value(env(&[(name, value)]));
            assert_eq!((key.as_str(), found.as_str()), (name, value));
            assert!(reason.contains(reason_part), "{value}: {reason}");
        }
        let zero = env(&[(name, "slow=0s")]);
        assert_eq!(invalid_value(zero).0, "events.inbox.handler-timeouts.slow");
    }

    #[test]
    fn dotted_keys_quote_what_is_not_bare() {
        assert_eq!(join("", "events"), "events");
        assert_eq!(
            join("commands.topics", "billing"),
            "commands.topics.billing"
        );
        assert_eq!(join("commands.topics", "a b"), "commands.topics.\"a b\"");
        assert_eq!(join("commands.topics", ""), "commands.topics.\"\"");
        assert_eq!(edit_distance("bach-size", "batch-size"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
