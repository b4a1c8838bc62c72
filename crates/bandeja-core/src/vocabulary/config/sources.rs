//! Reading the configuration from TOML documents and `BANDEJA_` environment variables.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use toml::Value;

use crate::config::{CompletionMode, HandlerTransaction};

use super::housekeeping::STALENESS_KEYS;
use super::{
    parse_bool, parse_duration, BoxKind, Config, ConfigError, Enabled, WorkerConfig, ENV_PREFIX,
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
const ROOT_KEYS: [&str; 5] = [
    "stuck-threshold",
    "events",
    "commands",
    "staleness",
    SEED_ROOT,
];
pub(super) const STALENESS: &str = "staleness";
pub(super) const TOPICS_KEY: &str = "commands.topics";
/// The table of seed 000's names (the Java archetype's `application.yml` keys).
const SEED_ROOT: &str = "app";
/// Seed 000's name of `commands.topics`.
const SEED_TOPICS_KEY: &str = "app.commands.topics";
/// The sections of `app`, and the keys of each (seed 000's group names).
const SEED_EVENTS_KEYS: [&str; 2] = ["outbox-processor", "inbox-processor"];
const SEED_COMMANDS_KEYS: [&str; 3] = ["outbox-dispatcher", "inbox-processor", "topics"];
const DURATION_HINT: &str = "expected a duration like `PT5S` or `5s`";

/// What one source (a file, or the environment) set: for each setting, by its dotted key
/// in bandeja's names (`events.outbox.batch-size`, `commands.topics.billing`,
/// `stuck-threshold`), the name it was written under and its value. Used to refuse one
/// setting written under both its names with different values, and to say which file a
/// validation error comes from.
#[derive(Debug, Default)]
pub(super) struct Written {
    settings: BTreeMap<String, WrittenAs>,
}

#[derive(Debug)]
struct WrittenAs {
    /// The key or variable, as written.
    key: String,
    /// The value, as written.
    shown: String,
    /// The value as read, comparable across spellings (`5s` and `PT5S` are equal).
    read: String,
}

impl Written {
    /// Records that `key` set the setting `canonical` (its value written as `shown`, read
    /// as `read`); an error if the source already set it under its other name to
    /// something else.
    fn note(
        &mut self,
        canonical: String,
        key: &str,
        shown: String,
        read: String,
    ) -> Result<(), ConfigError> {
        if let Some(earlier) = self.settings.get(&canonical) {
            if earlier.read != read {
                return Err(ConfigError::Conflict {
                    key: earlier.key.clone(),
                    value: earlier.shown.clone(),
                    other_key: key.to_owned(),
                    other_value: shown,
                });
            }
            return Ok(());
        }
        let key = key.to_owned();
        self.settings
            .insert(canonical, WrittenAs { key, shown, read });
        Ok(())
    }

    /// Whether this source set `key` (a dotted key in bandeja's names), a setting below it
    /// or the table above it; with the name it wrote for `key` when it set exactly `key`
    /// or a table above it (`events.inbox.handler-timeouts` for
    /// `events.inbox.handler-timeouts.slow`).
    fn lookup(&self, key: &str) -> Option<Option<String>> {
        let below = |outer: &str, inner: &str| {
            inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.starts_with('.'))
        };
        for (canonical, written) in &self.settings {
            if canonical == key || below(canonical, key) {
                let rest = &key[canonical.len()..];
                let renamed = (!written.key.starts_with(ENV_PREFIX))
                    .then(|| format!("{}{rest}", written.key));
                return Some(renamed);
            }
            if below(key, canonical) {
                return Some(None);
            }
        }
        None
    }
}

/// A validation error (found once every source was applied) made to say where the setting
/// came from: when the file (`path`) set the key it names and the environment did not,
/// the error names the key as the file wrote it (its seed name, if the file used that)
/// and is wrapped in [`ConfigError::InFile`].
pub(super) fn attribute(
    error: ConfigError,
    path: Option<&Path>,
    file: &Written,
    env: &Written,
) -> ConfigError {
    let ConfigError::InvalidValue { key, value, reason } = error else {
        return error;
    };
    if env.lookup(&key).is_some() {
        return ConfigError::InvalidValue { key, value, reason };
    }
    let Some(renamed) = file.lookup(&key) else {
        return ConfigError::InvalidValue { key, value, reason };
    };
    let key = renamed.unwrap_or(key);
    let error = ConfigError::InvalidValue { key, value, reason };
    match path {
        Some(path) => ConfigError::InFile {
            path: path.to_path_buf(),
            error: Box::new(error),
        },
        None => error,
    }
}

/// The group a dotted key names, in bandeja's names or the seed's.
fn group_named(key: &str) -> Option<BoxKind> {
    BoxKind::ALL
        .into_iter()
        .find(|g| g.key() == key || g.seed_key() == key)
}

/// Sets a group's field and records it in `written` (refusing the same setting written
/// under its other name with another value).
fn set_group_field(
    config: &mut Config,
    written: &mut Written,
    group: BoxKind,
    field: &str,
    raw: Raw<'_>,
    key: &str,
) -> Result<(), ConfigError> {
    // The field alone on the group's defaults: two spellings of one value compare equal.
    let mut alone = group.defaults();
    set_field(&mut alone, field, raw, key)?;
    written.note(
        join(group.key(), field),
        key,
        raw.shown(),
        format!("{alone:?}"),
    )?;
    set_field(config.group_mut(group), field, raw, key)
}

/// Overlays a parsed TOML document; keys are checked, values converted, nothing validated.
fn overlay_toml(config: &mut Config, root: &toml::Table) -> Result<Written, ConfigError> {
    let mut written = Written::default();
    for (name, value) in root {
        match name.as_str() {
            "stuck-threshold" => {
                let raw = Raw::Toml(value);
                config.stuck_threshold = raw.duration(name)?;
                let read = format!("{:?}", config.stuck_threshold);
                written.note(name.clone(), name, raw.shown(), read)?;
            }
            STALENESS => {
                for (field, value) in as_table(value, name)? {
                    let key = join(name, field);
                    set_staleness(config, field, Raw::Toml(value), &key)?;
                    written.note(key.clone(), &key, Raw::Toml(value).shown(), String::new())?;
                }
            }
            "events" | "commands" => overlay_section(config, &mut written, name, value)?,
            SEED_ROOT => {
                for (section, value) in as_table(value, name)? {
                    let key = join(name, section);
                    match section.as_str() {
                        "events" | "commands" => {
                            overlay_section(config, &mut written, &key, value)?;
                        }
                        _ => return Err(unknown(key)),
                    }
                }
            }
            _ => return Err(unknown(join("", name))),
        }
    }
    Ok(written)
}

/// Overlays `events` or `commands` (`section`), in bandeja's names, or `app.events` or
/// `app.commands`, in the seed's.
fn overlay_section(
    config: &mut Config,
    written: &mut Written,
    section: &str,
    value: &Value,
) -> Result<(), ConfigError> {
    for (sub, value) in as_table(value, section)? {
        let key = join(section, sub);
        if key == TOPICS_KEY || key == SEED_TOPICS_KEY {
            for (service, topic) in as_table(value, &key)? {
                let entry = join(&key, service);
                let Value::String(topic) = topic else {
                    return Err(Raw::Toml(topic).invalid(&entry, "expected a topic name string"));
                };
                let canonical = join(TOPICS_KEY, service);
                written.note(canonical, &entry, topic.clone(), topic.clone())?;
                config.command_topics.insert(service.clone(), topic.clone());
            }
            continue;
        }
        let group = group_named(&key).ok_or_else(|| unknown(key.clone()))?;
        for (field, value) in as_table(value, &key)? {
            let field_key = join(&key, field);
            set_group_field(config, written, group, field, Raw::Toml(value), &field_key)?;
        }
    }
    Ok(())
}

/// Overlays the `BANDEJA_` variables of `vars` in name order (so the first error reported
/// does not depend on the environment's order); nothing validated.
pub(super) fn overlay_env<I: IntoIterator<Item = (String, String)>>(
    config: &mut Config,
    vars: I,
) -> Result<Written, ConfigError> {
    let mut ours: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(name, _)| {
            name.starts_with(ENV_PREFIX) && !RESERVED_ENV_VARS.contains(&name.as_str())
        })
        .collect();
    ours.sort();
    let mut written = Written::default();
    for (name, value) in &ours {
        let rest = name.strip_prefix(ENV_PREFIX).unwrap_or(name);
        match rest {
            "STUCK_THRESHOLD" => {
                config.stuck_threshold = Raw::Env(value).duration(name)?;
                let read = format!("{:?}", config.stuck_threshold);
                written.note("stuck-threshold".to_owned(), name, value.clone(), read)?;
            }
            "COMMANDS_TOPICS" | "APP_COMMANDS_TOPICS" => {
                let topics = parse_topics(name, value)?;
                let read = format!("{topics:?}");
                written.note(TOPICS_KEY.to_owned(), name, value.clone(), read)?;
                config.command_topics = topics;
            }
            _ if rest.starts_with("STALENESS_") => {
                let part = rest.trim_start_matches("STALENESS_");
                let field = STALENESS_KEYS.into_iter().find(|k| env_key(k) == part);
                let field = field.ok_or_else(|| unknown(name.clone()))?;
                set_staleness(config, field, Raw::Env(value), name)?;
                let key = join(STALENESS, field);
                written.note(key, name, value.clone(), String::new())?;
            }
            _ => {
                let target = BoxKind::ALL.into_iter().find_map(|g| {
                    let part = [env_group(g), env_seed_group(g)]
                        .iter()
                        .find_map(|prefix| rest.strip_prefix(prefix.as_str())?.strip_prefix('_'))?;
                    GROUP_KEYS
                        .into_iter()
                        .find(|k| env_key(k) == part)
                        .map(|field| (g, field))
                });
                let (group, field) = target.ok_or_else(|| unknown(name.clone()))?;
                set_group_field(config, &mut written, group, field, Raw::Env(value), name)?;
            }
        }
    }
    Ok(written)
}

/// A value from TOML or from an environment variable.
#[derive(Clone, Copy)]
enum Raw<'a> {
    Toml(&'a Value),
    Env(&'a str),
}

impl<'a> Raw<'a> {
    /// The value as written, for messages.
    fn shown(self) -> String {
        match self {
            Raw::Env(s) => s.to_owned(),
            Raw::Toml(Value::String(s)) => s.clone(),
            Raw::Toml(Value::Table(_)) => "<table>".to_owned(),
            Raw::Toml(other) => other.to_string(),
        }
    }

    fn invalid(self, key: &str, reason: impl Into<String>) -> ConfigError {
        invalid(key, &self.shown(), reason)
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

/// Overlays the TOML document `text` on `config` (not validated); `origin` is named by
/// syntax errors.
pub(super) fn overlay_toml_text(
    config: &mut Config,
    text: &str,
    origin: &str,
) -> Result<Written, ConfigError> {
    let root: toml::Table = toml::from_str(text).map_err(|source| ConfigError::Parse {
        path_or_origin: origin.to_owned(),
        source,
    })?;
    overlay_toml(config, &root)
}

/// Overlays the TOML file at `path` on `config` (not validated). An unknown key, a bad
/// value or a conflict is [`ConfigError::InFile`]; syntax and I/O errors name the file
/// themselves.
pub(super) fn read_toml_file(config: &mut Config, path: &Path) -> Result<Written, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    overlay_toml_text(config, &text, &path.display().to_string()).map_err(|error| match error {
        ConfigError::Parse { .. } | ConfigError::Io { .. } | ConfigError::InFile { .. } => error,
        other => ConfigError::InFile {
            path: path.to_path_buf(),
            error: Box::new(other),
        },
    })
}

/// The group part of environment variables: `EVENTS_OUTBOX` for `events.outbox`.
fn env_group(group: BoxKind) -> String {
    env_key(&group.key().replace('.', "-"))
}

/// The same for the seed's name: `APP_EVENTS_OUTBOX_PROCESSOR` for
/// `app.events.outbox-processor`.
fn env_seed_group(group: BoxKind) -> String {
    env_key(&group.seed_key().replace('.', "-"))
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
            let group_prefix = BoxKind::ALL
                .into_iter()
                .flat_map(|g| [env_group(g), env_seed_group(g)])
                .find(|prefix| rest.starts_with(prefix.as_str()));
            match group_prefix {
                Some(group) => {
                    let prefix = format!("{ENV_PREFIX}{group}_");
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
                        BoxKind::ALL.map(|g| format!("{ENV_PREFIX}{}_<KEY>", env_group(g)));
                    full.extend(per_group);
                    full.push(format!("{ENV_PREFIX}APP_COMMANDS_TOPICS"));
                    let per_seed_group =
                        BoxKind::ALL.map(|g| format!("{ENV_PREFIX}{}_<KEY>", env_seed_group(g)));
                    full.extend(per_seed_group);
                    let shown = quoted(&full);
                    (full, shown)
                }
            }
        }
    } else {
        let (parent, leaves): (&str, &[&str]) = match BoxKind::ALL.into_iter().find_map(|g| {
            [g.key(), g.seed_key()]
                .into_iter()
                .find(|name| key.starts_with(&format!("{name}.")))
        }) {
            Some(group) => (group, &GROUP_KEYS),
            None if key.starts_with("events.") => ("events", &["outbox", "inbox"]),
            None if key.starts_with("commands.") => ("commands", &["outbox", "inbox", "topics"]),
            None if key.starts_with("staleness.") => (STALENESS, &STALENESS_KEYS),
            None if key.starts_with("app.events.") => ("app.events", &SEED_EVENTS_KEYS),
            None if key.starts_with("app.commands.") => ("app.commands", &SEED_COMMANDS_KEYS),
            None if key.starts_with("app.") => (SEED_ROOT, &["events", "commands"]),
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
                "expected one of `stuck-threshold`, `events`, `commands`, `staleness`, `app` at the top level",
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

    /// The keys seed 000 lists for each of its four groups, with a value each (none the
    /// default of any group).
    const SEED_KEYS: [(&str, &str); 7] = [
        ("enabled", "false"),
        ("polling-interval", "\"PT7S\""),
        ("polling-initial-delay", "\"PT3S\""),
        ("lock-at-least-for", "\"PT11S\""),
        ("lock-at-most-for", "\"PT41S\""),
        ("batch-size", "77"),
        ("max-retries", "9"),
    ];

    /// `group` with the values of [`SEED_KEYS`].
    fn with_seed_values(group: BoxKind) -> WorkerConfig {
        WorkerConfig {
            enabled: Enabled::Off,
            polling_interval: secs(7),
            polling_initial_delay: secs(3),
            lock_at_least_for: secs(11),
            lock_at_most_for: secs(41),
            batch_size: 77,
            max_retries: 9,
            ..group.defaults()
        }
    }

    fn seed_table(name: &str) -> String {
        let lines: Vec<String> = SEED_KEYS
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        format!("[{name}]\n{}\n", lines.join("\n"))
    }

    #[test]
    fn each_seed_group_name_sets_its_group() {
        let names = [
            ("app.events.outbox-processor", BoxKind::OutboxEvents),
            ("app.events.inbox-processor", BoxKind::InboxEvents),
            ("app.commands.outbox-dispatcher", BoxKind::OutboxCommands),
            ("app.commands.inbox-processor", BoxKind::InboxCommands),
        ];
        for (name, group) in names {
            assert_eq!(group.seed_key(), name);
            let seed = Config::from_toml_str(&seed_table(name)).map_err(|e| e.to_string());
            let ours = Config::from_toml_str(&seed_table(group.key())).map_err(|e| e.to_string());
            let mut expected = Config::default();
            *expected.group_mut(group) = with_seed_values(group);
            assert_eq!(seed, Ok(expected.clone()), "{name}");
            assert_eq!(ours, Ok(expected), "{}", group.key());
        }
        // Keys bandeja adds to a group work under the seed's name too.
        let text = "[app.events.inbox-processor]\nhandler-timeout = \"1m\"\nmax-takeovers = 5\n\
                    [app.events.inbox-processor.handler-timeouts]\nslow = \"2m\"";
        let inbox = Config::from_toml_str(text).map(|c| c.events_inbox);
        let expected = WorkerConfig::events_inbox_defaults()
            .handler_timeout(secs(60))
            .max_takeovers(5)
            .handler_timeout_for("slow", secs(120));
        assert_eq!(inbox.map_err(|e| e.to_string()), Ok(expected));
    }

    #[test]
    fn the_seed_topics_name_sets_the_routing_table() {
        let text = "[app.commands.topics]\nbilling = \"billing.commands\"\n\
                    [commands.topics]\nshipping = \"shipping.cmds\"";
        let expected = Config::default()
            .with_command_topic("billing", "billing.commands")
            .with_command_topic("shipping", "shipping.cmds");
        let config = Config::from_toml_str(text).map_err(|e| e.to_string());
        assert_eq!(config, Ok(expected));
        let config = env(&[("BANDEJA_APP_COMMANDS_TOPICS", "billing=billing.commands")]);
        let expected = Config::default().with_command_topic("billing", "billing.commands");
        assert_eq!(config.map_err(|e| e.to_string()), Ok(expected));
        let (key, _, reason) = invalid_value(env(&[("BANDEJA_APP_COMMANDS_TOPICS", "billing")]));
        assert_eq!(key, "BANDEJA_APP_COMMANDS_TOPICS");
        assert!(reason.contains("missing `=`"), "{reason}");
    }

    #[test]
    fn each_seed_group_name_has_an_environment_form() {
        let names = [
            (
                "BANDEJA_APP_EVENTS_OUTBOX_PROCESSOR_",
                BoxKind::OutboxEvents,
            ),
            ("BANDEJA_APP_EVENTS_INBOX_PROCESSOR_", BoxKind::InboxEvents),
            (
                "BANDEJA_APP_COMMANDS_OUTBOX_DISPATCHER_",
                BoxKind::OutboxCommands,
            ),
            (
                "BANDEJA_APP_COMMANDS_INBOX_PROCESSOR_",
                BoxKind::InboxCommands,
            ),
        ];
        for (prefix, group) in names {
            let vars: Vec<(String, String)> = SEED_KEYS
                .iter()
                .map(|(key, value)| {
                    let name = format!("{prefix}{}", key.to_ascii_uppercase().replace('-', "_"));
                    (name, value.trim_matches('"').to_owned())
                })
                .collect();
            let config = Config::default().apply_env(vars).map_err(|e| e.to_string());
            let mut expected = Config::default();
            *expected.group_mut(group) = with_seed_values(group);
            assert_eq!(config, Ok(expected), "{prefix}");
        }
        let (key, value, reason) = invalid_value(env(&[(
            "BANDEJA_APP_EVENTS_INBOX_PROCESSOR_POLLING_INTERVAL",
            "soon",
        )]));
        assert_eq!(
            (key.as_str(), value.as_str()),
            (
                "BANDEJA_APP_EVENTS_INBOX_PROCESSOR_POLLING_INTERVAL",
                "soon"
            )
        );
        assert!(reason.contains("expected a duration"), "{reason}");
    }

    /// The two (name, value) pairs of a `Conflict`, sorted, and its message.
    fn conflict(result: Result<Config, ConfigError>) -> ([(String, String); 2], String) {
        let error = result.err();
        let message = error.as_ref().map(ToString::to_string).unwrap_or_default();
        match error {
            Some(ConfigError::Conflict {
                key,
                value,
                other_key,
                other_value,
            }) => {
                let mut pairs = [(key, value), (other_key, other_value)];
                pairs.sort();
                (pairs, message)
            }
            other => panic!("expected Conflict, got {other:?}"),
        }
    }

    fn names(pairs: [(String, String); 2]) -> [String; 2] {
        pairs.map(|(name, _)| name)
    }

    #[test]
    fn one_setting_under_both_names_with_different_values_is_a_conflict() {
        let text =
            "[events.outbox]\nbatch-size = 10\n[app.events.outbox-processor]\nbatch-size = 20";
        let (pairs, message) = conflict(Config::from_toml_str(text));
        assert_eq!(
            pairs,
            [
                (
                    "app.events.outbox-processor.batch-size".to_owned(),
                    "20".to_owned()
                ),
                ("events.outbox.batch-size".to_owned(), "10".to_owned()),
            ]
        );
        for part in [
            "`app.events.outbox-processor.batch-size`",
            "`events.outbox.batch-size`",
            "keep one of them",
        ] {
            assert!(message.contains(part), "{message}");
        }

        let text = "[commands.topics]\nbilling = \"a\"\n[app.commands.topics]\nbilling = \"b\"";
        let (pairs, _) = conflict(Config::from_toml_str(text));
        assert_eq!(
            names(pairs),
            ["app.commands.topics.billing", "commands.topics.billing"]
        );

        let (pairs, _) = conflict(env(&[
            ("BANDEJA_COMMANDS_INBOX_MAX_RETRIES", "1"),
            ("BANDEJA_APP_COMMANDS_INBOX_PROCESSOR_MAX_RETRIES", "2"),
        ]));
        assert_eq!(
            names(pairs),
            [
                "BANDEJA_APP_COMMANDS_INBOX_PROCESSOR_MAX_RETRIES",
                "BANDEJA_COMMANDS_INBOX_MAX_RETRIES"
            ]
        );
        let (pairs, _) = conflict(env(&[
            ("BANDEJA_COMMANDS_TOPICS", "billing=a"),
            ("BANDEJA_APP_COMMANDS_TOPICS", "billing=b"),
        ]));
        assert_eq!(
            names(pairs),
            ["BANDEJA_APP_COMMANDS_TOPICS", "BANDEJA_COMMANDS_TOPICS"]
        );

        // The same value under both names (however it is spelt) is no conflict.
        let text = "[events.inbox]\npolling-interval = \"5s\"\n\
                    [app.events.inbox-processor]\npolling-interval = \"PT5S\"";
        let polling = Config::from_toml_str(text).map(|c| c.events_inbox.polling_interval);
        assert_eq!(polling.map_err(|e| e.to_string()), Ok(secs(5)));
        let same = env(&[
            ("BANDEJA_EVENTS_INBOX_ENABLED", "true"),
            ("BANDEJA_APP_EVENTS_INBOX_PROCESSOR_ENABLED", "yes"),
        ]);
        assert_eq!(same.map(|c| c.events_inbox.enabled).ok(), Some(Enabled::On));

        // Different sources layer as usual: the environment wins over the file.
        let path = std::env::temp_dir().join(format!("bandeja-seed-{}.toml", uuid::Uuid::new_v4()));
        let written = std::fs::write(&path, "[events.outbox]\nbatch-size = 10\n");
        assert!(written.is_ok(), "{written:?}");
        let vars = [(
            "BANDEJA_APP_EVENTS_OUTBOX_PROCESSOR_BATCH_SIZE".to_owned(),
            "20".to_owned(),
        )];
        let layered = Config::default().load_over_with_env(Some(&path), vars);
        let _ = std::fs::remove_file(&path);
        let batch = layered.map(|c| c.events_outbox.batch_size);
        assert_eq!(batch.map_err(|e| e.to_string()), Ok(20));
    }

    #[test]
    fn unknown_keys_in_the_seed_names_are_named() {
        let cases = [
            (
                "[app.events.outbox-processor]\ncron = \"0 * * * *\"",
                "app.events.outbox-processor.cron",
                "in `app.events.outbox-processor`",
            ),
            (
                "[app.events.inbox-processor]\nbach-size = 3",
                "app.events.inbox-processor.bach-size",
                "did you mean `app.events.inbox-processor.batch-size`?",
            ),
            (
                "[app.events.outbox]\nbatch-size = 3",
                "app.events.outbox",
                "`outbox-processor`, `inbox-processor` in `app.events`",
            ),
            (
                "[app.commands.outbox-processor]\nbatch-size = 3",
                "app.commands.outbox-processor",
                "`outbox-dispatcher`, `inbox-processor`, `topics` in `app.commands`",
            ),
            (
                "[app.security]\nenabled = true",
                "app.security",
                "`events`, `commands` in `app`",
            ),
        ];
        for (text, key, hint) in cases {
            let (found, message) = unknown_key(Config::from_toml_str(text));
            assert_eq!(found, key, "{text}");
            assert!(message.contains(hint), "{message}");
        }
        let (found, message) = unknown_key(env(&[(
            "BANDEJA_APP_COMMANDS_OUTBOX_DISPATCHER_BATCHSIZE",
            "3",
        )]));
        assert_eq!(found, "BANDEJA_APP_COMMANDS_OUTBOX_DISPATCHER_BATCHSIZE");
        assert!(
            message.contains("did you mean `BANDEJA_APP_COMMANDS_OUTBOX_DISPATCHER_BATCH_SIZE`?"),
            "{message}"
        );
        let (_, message) = unknown_key(env(&[("BANDEJA_APP_COMMANDS_TOPIC", "a=b")]));
        assert!(
            message.contains("did you mean `BANDEJA_APP_COMMANDS_TOPICS`?"),
            "{message}"
        );
    }

    /// A file in the temp dir, removed on drop.
    struct TempFile(std::path::PathBuf);

    impl TempFile {
        fn new(text: &str) -> TempFile {
            let name = format!("bandeja-config-{}.toml", uuid::Uuid::new_v4());
            let path = std::env::temp_dir().join(name);
            let written = std::fs::write(&path, text);
            assert!(written.is_ok(), "{written:?}");
            TempFile(path)
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// The file and the inner error of an `InFile`.
    fn in_file(result: Result<Config, ConfigError>) -> (std::path::PathBuf, ConfigError, String) {
        match result {
            Err(e @ ConfigError::InFile { .. }) => {
                let message = e.to_string();
                let ConfigError::InFile { path, error } = e else {
                    unreachable!("matched above")
                };
                (path, *error, message)
            }
            other => panic!("expected InFile, got {other:?}"),
        }
    }

    #[test]
    fn errors_in_a_file_name_the_file_and_the_key() {
        let misspelt = TempFile::new("[app.events.outbox-processor]\npoling-interval = \"5s\"\n");
        let (path, error, message) = in_file(Config::from_toml_file(&misspelt.0));
        assert_eq!(path, misspelt.0);
        assert_eq!(
            error.key(),
            Some("app.events.outbox-processor.poling-interval")
        );
        assert!(matches!(error, ConfigError::UnknownKey { .. }), "{error:?}");
        let file = misspelt.0.display().to_string();
        assert!(message.contains(&file), "{message}");
        assert!(message.contains("did you mean `app.events.outbox-processor.polling-interval`?"));

        let bad_duration = TempFile::new("[events.inbox]\nlock-at-most-for = \"20 seconds\"\n");
        let result =
            Config::default().load_over_with_env(Some(&bad_duration.0), std::iter::empty());
        let (_, error, message) = in_file(result);
        assert_eq!(error.key(), Some("events.inbox.lock-at-most-for"));
        assert!(message.contains("expected a duration"), "{message}");
        assert!(message.contains(&bad_duration.0.display().to_string()));

        let conflicting = TempFile::new(
            "[commands.outbox]\nenabled = true\n[app.commands.outbox-dispatcher]\nenabled = false\n",
        );
        let (_, error, _) = in_file(Config::from_toml_file(&conflicting.0));
        assert!(matches!(error, ConfigError::Conflict { .. }), "{error:?}");

        // A validation error about a setting the file alone made names the file and the
        // key as the file wrote it.
        let too_short = TempFile::new("[app.events.outbox-processor]\nlock-at-most-for = \"5s\"\n");
        let (_, error, message) = in_file(Config::from_toml_file(&too_short.0));
        assert_eq!(
            error.key(),
            Some("app.events.outbox-processor.lock-at-most-for")
        );
        assert!(message.contains("at least lock-at-least-for"), "{message}");
        let zero = TempFile::new("[app.events.inbox-processor.handler-timeouts]\nslow = \"0s\"\n");
        let (_, error, _) = in_file(Config::from_toml_file(&zero.0));
        assert_eq!(
            error.key(),
            Some("app.events.inbox-processor.handler-timeouts.slow")
        );
        // ... unless the environment set it too: then it is not the file's.
        let vars = [(
            "BANDEJA_EVENTS_OUTBOX_LOCK_AT_MOST_FOR".to_owned(),
            "6s".to_owned(),
        )];
        let result = Config::default().load_over_with_env(Some(&too_short.0), vars);
        let (key, value, _) = invalid_value(result);
        assert_eq!(
            (key.as_str(), value.as_str()),
            ("events.outbox.lock-at-most-for", "PT6S")
        );
        // From a string, the key as written, no file.
        let text = "[app.events.outbox-processor]\nlock-at-most-for = \"5s\"";
        let (key, _, _) = invalid_value(Config::from_toml_str(text));
        assert_eq!(key, "app.events.outbox-processor.lock-at-most-for");
    }

    #[test]
    fn load_over_layers_code_then_file_then_env() {
        let file =
            TempFile::new("[app.events.inbox-processor]\nbatch-size = 20\nmax-retries = 5\n");
        let mut code = Config::default();
        code.events_inbox.polling_interval = secs(1);
        code.events_inbox.batch_size = 7;
        let vars = [(
            "BANDEJA_EVENTS_INBOX_MAX_RETRIES".to_owned(),
            "6".to_owned(),
        )];
        let inbox = code.load_over_with_env(Some(&file.0), vars).map(|c| {
            let i = c.events_inbox;
            (i.polling_interval, i.batch_size, i.max_retries)
        });
        assert_eq!(inbox.map_err(|e| e.to_string()), Ok((secs(1), 20, 6)));
        let none = Config::default().load_over_with_env(None, std::iter::empty());
        assert_eq!(none.ok(), Some(Config::default()));
    }
}
