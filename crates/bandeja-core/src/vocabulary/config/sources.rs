//! The sources of the configuration: TOML documents (a file, a string) and `BANDEJA_`
//! environment variables, each turned into settings in bandeja's names (the seed's names
//! renamed), laid over the configuration below them and read once; errors name the key as
//! its source wrote it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Value;

use super::hints::{self, dotted};
use super::schema::{keys, read, seed_names, tree_of, Key};
use super::tree::{Node, ReadError};
use super::{Config, ConfigError, ConfigErrorKind, ENV_PREFIX, RESERVED_ENV_VARS};

/// One setting a source made.
#[derive(Debug, Clone)]
struct Setting {
    /// Where, in bandeja's names (`events.outbox.batch-size`).
    path: Vec<String>,
    /// As written: the TOML key's path (perhaps in the seed's names), or the variable.
    written: Vec<String>,
    /// The value as written, for messages.
    shown: String,
    node: Node,
    /// Whether it replaces a table there instead of being merged into it.
    whole: bool,
}

/// The settings of one file, string or environment.
#[derive(Debug)]
pub(super) struct Source {
    /// The file they are in, named by errors about them.
    file: Option<PathBuf>,
    /// Whether they are environment variables (named by their variable).
    env: bool,
    settings: Vec<Setting>,
}

/// How a table is written in one variable: `name=value` pairs; the words name them in
/// errors.
struct Pairs {
    name: &'static str,
    value: &'static str,
    value_required: bool,
}

fn pairs_of(key: &Key) -> Pairs {
    let (name, value, value_required) = match key.path().last().copied() {
        Some("topics") => ("service", "topic", true),
        Some("handler-timeouts") => ("subscriber", "duration", false),
        _ => ("name", "value", false),
    };
    Pairs {
        name,
        value,
        value_required,
    }
}

impl Source {
    /// The TOML document `text`; `origin` names it in syntax errors.
    pub(super) fn toml_text(
        text: &str,
        origin: &str,
        file: Option<&Path>,
    ) -> Result<Source, ConfigError> {
        let root: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError::parse(origin, file, e))?;
        Source::toml_value(Value::Table(root), file)
    }

    /// The TOML file at `path`.
    pub(super) fn toml_file(path: &Path) -> Result<Source, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, e))?;
        Source::toml_text(&text, &path.display().to_string(), Some(path))
    }

    /// A TOML document already parsed.
    pub(super) fn toml_value(root: Value, file: Option<&Path>) -> Result<Source, ConfigError> {
        let mut source = Source {
            file: file.map(Path::to_path_buf),
            env: false,
            settings: Vec::new(),
        };
        if !root.is_table() {
            let reason = "expected a table of configuration keys";
            return Err(ConfigError::invalid_value(
                "(the configuration)",
                shown(&root),
                reason,
            ));
        }
        let flat = source.flatten(&mut Vec::new(), root);
        flat.and_then(|()| source.check_conflicts())
            .map_err(|e| source.locate(e))?;
        Ok(source)
    }

    /// The `BANDEJA_` variables of `vars` (the reserved ones and others ignored), in name
    /// order, so that the first error reported does not depend on the environment's order.
    pub(super) fn env<I: IntoIterator<Item = (String, String)>>(
        vars: I,
    ) -> Result<Source, ConfigError> {
        let mut ours: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(name, _)| {
                name.starts_with(ENV_PREFIX) && !RESERVED_ENV_VARS.contains(&name.as_str())
            })
            .collect();
        ours.sort();
        let mut known: BTreeMap<String, &Key> = BTreeMap::new();
        for key in keys() {
            known.insert(key.env_var(), key);
            if let Some(seed) = key.seed() {
                known.insert(seed.env_var(), key);
            }
        }
        let mut source = Source {
            file: None,
            env: true,
            settings: Vec::new(),
        };
        for (name, value) in ours {
            let key = known.get(&name).ok_or_else(|| hints::unknown_var(&name))?;
            let node = if key.is_table() {
                env_table(&name, &value, &pairs_of(key))?
            } else {
                Node::Text(value.clone())
            };
            source.settings.push(Setting {
                path: key.path().iter().map(|p| (*p).to_owned()).collect(),
                written: vec![name],
                shown: value,
                node,
                whole: true,
            });
        }
        source.check_conflicts()?;
        Ok(source)
    }

    /// Adds the values and empty tables of `value` (at `written`) as settings. A table-valued
    /// key other than `commands.topics` (a `handler-timeouts`) is one setting that replaces
    /// the table below it, `{}` clearing it; `commands.topics` is merged entry by entry.
    fn flatten(&mut self, written: &mut Vec<String>, value: Value) -> Result<(), ConfigError> {
        if value.is_table() {
            if let Some(path) = canonical(written, &value)?.filter(|p| replaces(p)) {
                self.settings.push(Setting {
                    path,
                    written: written.clone(),
                    shown: shown(&value),
                    node: Node::from(value),
                    whole: true,
                });
                return Ok(());
            }
        }
        match value {
            Value::Table(table) if !table.is_empty() || written.is_empty() => {
                for (name, value) in table {
                    written.push(name);
                    self.flatten(written, value)?;
                    written.pop();
                }
                Ok(())
            }
            value => {
                let Some(path) = canonical(written, &value)? else {
                    return Ok(());
                };
                let table = value.is_table();
                self.settings.push(Setting {
                    path,
                    written: written.clone(),
                    shown: shown(&value),
                    node: Node::from(value),
                    whole: !table,
                });
                Ok(())
            }
        }
    }

    /// One setting written under both its names with values that differ once read (`5s`
    /// and `PT5S` do not) is an error naming both.
    fn check_conflicts(&self) -> Result<(), ConfigError> {
        for (i, a) in self.settings.iter().enumerate() {
            for b in &self.settings[i + 1..] {
                if a.path != b.path || a.written == b.written {
                    continue;
                }
                if self.alone(a)? != self.alone(b)? {
                    return Err(ConfigError::conflict(
                        dotted(&a.written),
                        a.shown.clone(),
                        dotted(&b.written),
                        b.shown.clone(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The defaults with `setting` alone laid over them.
    fn alone(&self, setting: &Setting) -> Result<Config, ConfigError> {
        let one = Source {
            file: None,
            env: self.env,
            settings: vec![setting.clone()],
        };
        overlay(Config::default(), &[one])
    }

    /// `error`, found in this source: naming its file, if it has one.
    fn locate(&self, error: ConfigError) -> ConfigError {
        match &self.file {
            Some(path) if error.file().is_none() => error.in_file(path),
            _ => error,
        }
    }

    /// How this source wrote the key at `path`, and the value it wrote there: a setting at
    /// `path` or above it (the last one wins), or else one below it.
    fn find(&self, path: &[String]) -> Option<(Vec<String>, String)> {
        let written = |s: &Setting, shared: usize| -> Vec<String> {
            if self.env {
                return s.written.clone();
            }
            let cut = s.written.len().saturating_sub(s.path.len() - shared);
            s.written[..cut]
                .iter()
                .chain(&path[shared..])
                .cloned()
                .collect()
        };
        let above = self
            .settings
            .iter()
            .rev()
            .find(|s| path.starts_with(&s.path));
        if let Some(s) = above {
            let value = match s.node.get(&path[s.path.len()..]) {
                Some(Node::Value(entry)) if path.len() > s.path.len() => shown(entry),
                _ => s.shown.clone(),
            };
            return Some((written(s, s.path.len()), value));
        }
        let below = self
            .settings
            .iter()
            .rev()
            .find(|s| s.path.starts_with(path));
        below.map(|s| (written(s, path.len()), "<table>".to_owned()))
    }

    /// [`Source::find`] for a dotted key in bandeja's names (as validation names them):
    /// the key as this source wrote it.
    fn find_dotted(&self, key: &str) -> Option<String> {
        let written = |s: &Setting, shared: usize| {
            let cut = s.written.len().saturating_sub(s.path.len() - shared);
            dotted(&s.written[..cut])
        };
        let above = self.settings.iter().rev().find_map(|s| {
            let rest = key.strip_prefix(dotted(&s.path).as_str())?;
            let at = rest.is_empty() || rest.starts_with('.');
            at.then(|| format!("{}{rest}", written(s, s.path.len())))
        });
        above.or_else(|| {
            self.settings.iter().rev().find_map(|s| {
                let shared = (1..s.path.len()).find(|n| dotted(&s.path[..*n]) == key)?;
                Some(written(s, shared))
            })
        })
    }
}

/// The table keys a file's table is merged into, entry by entry; a file's table at any
/// other table key replaces it.
const MERGED_TABLES: [&str; 1] = ["commands.topics"];

/// Whether a file's table at `path` (bandeja's names) replaces the table there: `path` is
/// a table-valued key other than those of [`MERGED_TABLES`].
fn replaces(path: &[String]) -> bool {
    keys().iter().any(|k| {
        k.is_table()
            && k.path().iter().copied().eq(path.iter().map(String::as_str))
            && !MERGED_TABLES.contains(&k.dotted().as_str())
    })
}

/// `written` in bandeja's names: the seed's names renamed. `None` for an empty table on
/// the way to the seed's names (`[app]`); an error for any other key under `app`.
fn canonical(written: &[String], value: &Value) -> Result<Option<Vec<String>>, ConfigError> {
    if written.first().map(String::as_str) != Some("app") {
        return Ok(Some(written.to_vec()));
    }
    let mut depth = 0;
    for (seed, ours) in seed_names() {
        let seed: Vec<&str> = seed.split('.').collect();
        if written.len() >= seed.len() && written[..seed.len()] == seed[..] {
            let tail = written[seed.len()..].iter().cloned();
            return Ok(Some(
                ours.split('.').map(str::to_owned).chain(tail).collect(),
            ));
        }
        let shared = seed.iter().zip(written).take_while(|(a, b)| **a == **b);
        depth = depth.max(shared.count());
    }
    if depth < written.len() {
        return Err(hints::unknown_seed_key(written, depth));
    }
    match value {
        Value::Table(_) => Ok(None),
        other => Err(ConfigError::invalid_value(
            dotted(written),
            shown(other),
            "expected a table",
        )),
    }
}

/// A TOML value as written, for messages.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Table(_) => "<table>".to_owned(),
        other => other.to_string(),
    }
}

/// A table written in the variable `var`: `name=value` pairs separated by commas (blank
/// entries skipped).
fn env_table(var: &str, value: &str, words: &Pairs) -> Result<Node, ConfigError> {
    let mut table = BTreeMap::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |reason: String| {
            let (name, value_word) = (words.name, words.value);
            let reason = format!(
                "{reason} in `{entry}`; expected `{name}={value_word}` pairs separated by commas"
            );
            ConfigError::invalid_value(var, value, reason)
        };
        let (name, text) = entry
            .split_once('=')
            .ok_or_else(|| bad("missing `=`".to_owned()))?;
        let (name, text) = (name.trim(), text.trim());
        if name.is_empty() || (words.value_required && text.is_empty()) {
            let what = if words.value_required {
                format!("{} or {}", words.name, words.value)
            } else {
                words.name.to_owned()
            };
            return Err(bad(format!("empty {what} name")));
        }
        if table
            .insert(name.to_owned(), Node::Text(text.to_owned()))
            .is_some()
        {
            return Err(bad(format!("{} listed twice", words.name)));
        }
    }
    Ok(Node::Table(table))
}

/// `base` with the settings of `sources` laid over it in order, read (not validated).
fn overlay(base: Config, sources: &[Source]) -> Result<Config, ConfigError> {
    let mut tree = tree_of(base)?;
    for setting in sources.iter().flat_map(|s| &s.settings) {
        tree.set(&setting.path, setting.node.clone(), setting.whole);
    }
    read(tree).map_err(|(path, error)| {
        let found = sources
            .iter()
            .rev()
            .find_map(|source| Some((source, source.find(&path)?)));
        let (written, shown) = match &found {
            Some((_, (written, shown))) => (written.clone(), shown.clone()),
            None => (path.clone(), String::new()),
        };
        let error = match error {
            ReadError::Unknown { expected } => hints::unknown_key(&written, expected),
            ReadError::Invalid(reason) => {
                ConfigError::invalid_value(dotted(&written), shown, reason)
            }
        };
        match found {
            Some((source, _)) => source.locate(error),
            None => error,
        }
    })
}

/// `base` with the settings of `sources` laid over it, then validated. A validation error
/// about a setting the environment made keeps bandeja's name; one about a setting only a
/// file made names the key as the file wrote it, and the file.
pub(super) fn load(base: Config, sources: &[Source]) -> Result<Config, ConfigError> {
    let config = overlay(base, sources)?;
    config.validate().map_err(|error| {
        if error.kind() != ConfigErrorKind::InvalidValue {
            return error;
        }
        let key = error.key().unwrap_or_default().to_owned();
        let found = sources
            .iter()
            .rev()
            .find_map(|source| Some((source, source.find_dotted(&key)?)));
        match found {
            Some((source, written)) if !source.env => source.locate(error.renamed(written)),
            _ => error,
        }
    })?;
    Ok(config)
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
            return Err(hints::unknown_var(&lossy));
        }
        let value = value.into_string().map_err(|v| {
            ConfigError::invalid_value(&lossy, v.to_string_lossy(), "must be valid UTF-8")
        })?;
        vars.push((lossy, value));
    }
    Ok(vars)
}

#[cfg(test)]
mod tests;
