//! The configuration in the shape of its TOML file ([`Document`]), and the list of its
//! keys ([`keys`]), derived from the structs: serde's own field names, asked for at each
//! table of the defaults.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::record::BoxKind;

use super::tree::{Node, ReadError};
use super::{forms, Config, ConfigError, Staleness, WorkerConfig, ENV_PREFIX};

/// The TOML file's shape of [`Config`]: the same settings, grouped as the file groups
/// them. Adding a top-level key adds it here and in the two conversions below.
#[derive(Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub(super) struct Document {
    #[serde(with = "forms::duration")]
    stuck_threshold: Duration,
    events: Events,
    commands: Commands,
    staleness: Staleness,
}

/// `[events]`: its two groups.
#[derive(Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
struct Events {
    outbox: WorkerConfig,
    inbox: WorkerConfig,
}

/// `[commands]`: its two groups and the routing table.
#[derive(Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
struct Commands {
    outbox: WorkerConfig,
    inbox: WorkerConfig,
    #[serde(with = "forms::topics")]
    topics: BTreeMap<String, String>,
}

impl From<Config> for Document {
    fn from(c: Config) -> Self {
        Document {
            stuck_threshold: c.stuck_threshold,
            events: Events {
                outbox: c.events_outbox,
                inbox: c.events_inbox,
            },
            commands: Commands {
                outbox: c.commands_outbox,
                inbox: c.commands_inbox,
                topics: c.command_topics,
            },
            staleness: c.staleness,
        }
    }
}

impl From<Document> for Config {
    fn from(d: Document) -> Self {
        Config {
            stuck_threshold: d.stuck_threshold,
            events_outbox: d.events.outbox,
            events_inbox: d.events.inbox,
            commands_outbox: d.commands.outbox,
            commands_inbox: d.commands.inbox,
            command_topics: d.commands.topics,
            staleness: d.staleness,
        }
    }
}

impl Default for Document {
    fn default() -> Self {
        Document::from(Config::default())
    }
}

impl Default for Events {
    fn default() -> Self {
        Document::default().events
    }
}

impl Default for Commands {
    fn default() -> Self {
        Document::default().commands
    }
}

impl Serialize for Config {
    /// Writes the TOML file's shape, every key in bandeja's names.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Document::from(self.clone()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Config {
    /// Reads the TOML file's shape (bandeja's names or the seed's) over
    /// [`Config::default`], then validates; the error is the [`ConfigError`]'s full message.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(d)?;
        let source = super::sources::Source::toml_value(value, None)
            .map_err(|e| serde::de::Error::custom(e.full_message()))?;
        super::sources::load(Config::default(), &[source])
            .map_err(|e| serde::de::Error::custom(e.full_message()))
    }
}

/// `config` as the tree sources are laid on.
pub(super) fn tree_of(config: Config) -> Result<Node, ConfigError> {
    let value = toml::Value::try_from(Document::from(config)).map_err(|e| {
        ConfigError::invalid_value("(the configuration set in code)", "", e.to_string())
    })?;
    Ok(Node::from(value))
}

/// Reads `tree` once; an error comes with the path of the key it is about.
pub(super) fn read(tree: Node) -> Result<Config, (Vec<String>, ReadError)> {
    serde_path_to_error::deserialize::<_, Document>(tree)
        .map(Config::from)
        .map_err(|error| {
            let path = error.path().iter().map(ToString::to_string).collect();
            (path, error.into_inner())
        })
}

/// The seed's names of some tables: (seed 000's dotted name, bandeja's). Every key below
/// one works below the other.
pub(super) fn seed_names() -> [(&'static str, &'static str); 5] {
    let group = |g: BoxKind| (g.seed_key(), g.key());
    [
        group(BoxKind::OutboxEvents),
        group(BoxKind::InboxEvents),
        group(BoxKind::OutboxCommands),
        group(BoxKind::InboxCommands),
        ("app.commands.topics", "commands.topics"),
    ]
}

/// One key of the configuration: a value, or a table of name → value, at a dotted path
/// of the TOML file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    path: Vec<&'static str>,
    table: bool,
    duration: bool,
}

impl Key {
    /// The path of the key: `["events", "outbox", "batch-size"]`.
    #[must_use]
    pub fn path(&self) -> &[&'static str] {
        &self.path
    }

    /// The dotted key: `events.outbox.batch-size`.
    #[must_use]
    pub fn dotted(&self) -> String {
        self.path.join(".")
    }

    /// The environment variable that sets it: `BANDEJA_EVENTS_OUTBOX_BATCH_SIZE`.
    #[must_use]
    pub fn env_var(&self) -> String {
        env_var(&self.path)
    }

    /// Whether the key is a table of name → value (`handler-timeouts`,
    /// `commands.topics`), written in the environment as `name=value` pairs separated by
    /// commas.
    #[must_use]
    pub fn is_table(&self) -> bool {
        self.table
    }

    /// Whether the key takes a duration (validation bounds them all).
    pub(super) fn is_duration(&self) -> bool {
        self.duration
    }

    /// The same key in seed 000's names (`app.events.outbox-processor.batch-size`), when
    /// it has one.
    #[must_use]
    pub fn seed(&self) -> Option<Key> {
        let dotted = self.dotted();
        seed_names().into_iter().find_map(|(seed, ours)| {
            let rest = dotted.strip_prefix(ours)?;
            (rest.is_empty() || rest.starts_with('.')).then(|| {
                let tail = &self.path[ours.split('.').count()..];
                Key {
                    path: seed.split('.').chain(tail.iter().copied()).collect(),
                    ..self.clone()
                }
            })
        })
    }
}

/// The variable of a key at `path`: upper case, `.` and `-` as `_`, after `BANDEJA_`.
pub(super) fn env_var<S: AsRef<str>>(path: &[S]) -> String {
    let parts: Vec<&str> = path.iter().map(AsRef::as_ref).collect();
    let name = parts.join("_").to_ascii_uppercase().replace('-', "_");
    format!("{ENV_PREFIX}{name}")
}

/// A table of the file made of keys (a struct), with the names serde takes there.
#[derive(Debug)]
pub(super) struct Section {
    /// Its path (empty for the top level).
    pub(super) path: Vec<&'static str>,
    /// Its keys, in declaration order (serde's field names, aliases included).
    pub(super) fields: &'static [&'static str],
}

/// The keys and the tables holding them.
#[derive(Debug)]
pub(super) struct Schema {
    pub(super) keys: Vec<Key>,
    pub(super) sections: Vec<Section>,
}

/// Every key of the configuration in bandeja's names, in the order of the structs'
/// fields: the list the environment variables, the "did you mean" hints and the README's
/// reference are made from.
#[must_use]
pub fn keys() -> &'static [Key] {
    &schema().keys
}

/// The schema, derived once from the structs.
pub(super) fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let mut schema = Schema {
            keys: Vec::new(),
            sections: Vec::new(),
        };
        if let Ok(defaults) = tree_of(Config::default()) {
            walk(&defaults, &mut Vec::new(), &mut schema);
        }
        schema
    })
}

/// Adds the keys of the table at `path` of `defaults` (a struct: serde named its fields).
fn walk(defaults: &Node, path: &mut Vec<&'static str>, schema: &mut Schema) {
    let Some(fields) = fields_at(defaults, path) else {
        return;
    };
    schema.sections.push(Section {
        path: path.clone(),
        fields,
    });
    for field in fields {
        path.push(field);
        match defaults.get(path) {
            // An alias: serde takes it, the defaults are written under the field's name.
            None => {}
            Some(Node::Table(_)) if fields_at(defaults, path).is_some() => {
                walk(defaults, path, schema);
            }
            Some(node) => schema.keys.push(Key {
                path: path.clone(),
                table: matches!(node, Node::Table(_)),
                duration: takes(defaults, path, "PT1S"),
            }),
        }
        path.pop();
    }
}

/// Whether the key at `path` takes `value` (read over the defaults).
fn takes(defaults: &Node, path: &[&'static str], value: &str) -> bool {
    let mut probe = defaults.clone();
    probe.set(
        path,
        Node::Value(toml::Value::String(value.to_owned())),
        true,
    );
    read(probe).is_ok()
}

/// The field names serde takes at `path` when the table there is a struct: asked for by
/// adding a key no struct has and reading the unknown-key error (every struct of the
/// configuration denies unknown keys). `None` for a table of name → value.
fn fields_at(defaults: &Node, path: &[&'static str]) -> Option<&'static [&'static str]> {
    const PROBE: &str = "\u{0}probe";
    let mut probe = defaults.clone();
    let mut at: Vec<&str> = path.to_vec();
    at.push(PROBE);
    probe.set(&at, Node::table(), true);
    match read(probe) {
        Err((found, ReadError::Unknown { expected })) if found == at => Some(expected),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_are_the_fields_of_the_structs() {
        let dotted: Vec<String> = keys().iter().map(Key::dotted).collect();
        let group: Vec<String> = WorkerConfig::FIELD_DOCS
            .iter()
            .map(|(field, _)| field.replace('_', "-"))
            .collect();
        let staleness: Vec<String> = Staleness::FIELD_DOCS
            .iter()
            .map(|(field, _)| format!("staleness.{}", field.replace('_', "-")))
            .collect();
        let mut expected = vec!["stuck-threshold".to_owned()];
        for g in [
            "events.outbox",
            "events.inbox",
            "commands.outbox",
            "commands.inbox",
        ] {
            expected.extend(group.iter().map(|k| format!("{g}.{k}")));
            if g == "commands.inbox" {
                expected.push("commands.topics".to_owned());
            }
        }
        expected.extend(staleness);
        assert_eq!(dotted, expected);
        let tables: Vec<String> = keys()
            .iter()
            .filter(|k| k.is_table())
            .map(Key::dotted)
            .collect();
        let durations = keys().iter().filter(|k| k.is_duration()).count();
        // What the structs declare: a field of type `Duration` or `Option<Duration>` is a
        // duration, one of type `BTreeMap<..>` a table; a top-level key is a field of
        // `Config` (other than a group or `[staleness]`) whose doc starts with `` `key`: ``.
        let ty = |t: &str| t.replace(' ', "");
        let is_duration =
            |t: &&(&str, &str)| matches!(ty(t.1).as_str(), "Duration" | "Option<Duration>");
        let is_table = |t: &&(&str, &str)| ty(t.1).starts_with("BTreeMap<");
        let count = |types: &[(&str, &str)]| types.iter().filter(is_duration).count();
        let per_group = count(WorkerConfig::FIELD_TYPES);
        let (top, of_staleness) = (count(Config::FIELD_TYPES), count(Staleness::FIELD_TYPES));
        assert_eq!(
            durations,
            top + BoxKind::ALL.len() * per_group + of_staleness,
            "{top} top-level, {per_group} per group, {of_staleness} of staleness"
        );
        let top_level_key = |field: &str| {
            let (_, doc) = Config::FIELD_DOCS.iter().find(|(f, _)| *f == field)?;
            let rest = doc.first()?.trim().strip_prefix('`')?;
            rest.split_once("`:").map(|(key, _)| key.to_owned())
        };
        let mut expected_tables: Vec<String> = BoxKind::ALL
            .iter()
            .flat_map(|g| {
                WorkerConfig::FIELD_TYPES
                    .iter()
                    .filter(is_table)
                    .map(move |(field, _)| format!("{}.{}", g.key(), field.replace('_', "-")))
            })
            .collect();
        expected_tables.extend(
            Config::FIELD_TYPES
                .iter()
                .filter(is_table)
                .map(|(field, _)| top_level_key(field).unwrap_or_else(|| field.to_string())),
        );
        assert_eq!(tables, expected_tables);
    }

    #[test]
    fn keys_have_variables_and_seed_names() {
        let key = |dotted: &str| keys().iter().find(|k| k.dotted() == dotted).cloned();
        let batch = key("events.outbox.batch-size");
        assert_eq!(
            batch.as_ref().map(Key::env_var).as_deref(),
            Some("BANDEJA_EVENTS_OUTBOX_BATCH_SIZE")
        );
        let seed = batch.and_then(|k| k.seed());
        assert_eq!(
            seed.as_ref().map(Key::dotted).as_deref(),
            Some("app.events.outbox-processor.batch-size")
        );
        assert_eq!(
            seed.map(|k| k.env_var()).as_deref(),
            Some("BANDEJA_APP_EVENTS_OUTBOX_PROCESSOR_BATCH_SIZE")
        );
        let topics = key("commands.topics").and_then(|k| k.seed());
        assert_eq!(
            topics.map(|k| k.env_var()).as_deref(),
            Some("BANDEJA_APP_COMMANDS_TOPICS")
        );
        assert_eq!(key("stuck-threshold").and_then(|k| k.seed()), None);
        assert_eq!(
            key("staleness.pending").map(|k| k.env_var()).as_deref(),
            Some("BANDEJA_STALENESS_PENDING")
        );
    }
}
