//! The key reference of the README, generated from the field docs of the configuration
//! structs and the defaults, and a test that fails when the README's copy is out of date.

use std::fmt::Write as _;

use crate::record::BoxKind;

use super::hints::dotted;
use super::schema::{keys, read, tree_of, Key};
use super::tree::Node;
use super::{Config, Staleness, WorkerConfig};

/// Where the generated part of the README starts and ends.
const BEGIN: &str = "<!-- configuration keys: generated from the field docs in \
                     crates/bandeja-core/src/vocabulary/config; \
                     UPDATE_README=1 cargo test -p bandeja-core readme -->";
const END: &str = "<!-- end of the generated configuration keys -->";

/// The first paragraph of a field's doc, on one line, for a table cell.
fn paragraph(lines: &[&str]) -> String {
    let words: Vec<&str> = lines
        .iter()
        .map(|line| line.trim())
        .take_while(|line| !line.is_empty())
        .collect();
    let text = words.join(" ").replace('|', "\\|");
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => text,
    }
}

/// The doc of `key`: a field of [`WorkerConfig`] or [`Staleness`] named as the key's last
/// part, or a field of [`Config`] whose doc starts with the dotted key in backticks.
fn doc_of(key: &Key) -> Option<String> {
    let name = key.path().last().copied().unwrap_or_default();
    let field = |docs: &[(&str, &'static [&'static str])]| {
        docs.iter()
            .find(|(field, _)| field.replace('_', "-") == name)
            .map(|(_, lines)| paragraph(lines))
    };
    let parent = dotted(&key.path()[..key.path().len() - 1]);
    if BoxKind::ALL.iter().any(|g| g.key() == parent) {
        return field(WorkerConfig::FIELD_DOCS);
    }
    if parent == "staleness" {
        return field(Staleness::FIELD_DOCS);
    }
    let lead = format!("`{}`", key.dotted());
    Config::FIELD_DOCS.iter().find_map(|(_, lines)| {
        let first = lines.first()?.trim();
        let rest = first.strip_prefix(&lead)?.trim_start_matches(':');
        let mut lines = lines.to_vec();
        lines[0] = rest;
        Some(paragraph(&lines))
    })
}

/// A default value, for a table cell.
fn shown(node: Option<&Node>) -> String {
    match node {
        Some(Node::Value(toml::Value::String(s))) => format!("`{s}`"),
        Some(Node::Value(toml::Value::Boolean(b))) => format!("`{b}`"),
        Some(Node::Value(other)) => other.to_string(),
        Some(Node::Table(table)) if table.is_empty() => "none".to_owned(),
        Some(other) => format!("{other:?}"),
        None => "—".to_owned(),
    }
}

/// Whether validation lets the table at `path` of `defaults` have an entry: a table key of
/// a group that does not apply to that group (`handler-timeouts` of an outbox group, which
/// has no subscribers) refuses any entry, and its cell is `—`.
fn takes_entries(defaults: &Node, path: &[&str]) -> bool {
    let mut probe = defaults.clone();
    let at: Vec<&str> = path.iter().copied().chain(["probe"]).collect();
    probe.set(
        &at,
        Node::Value(toml::Value::String("PT1S".to_owned())),
        true,
    );
    let key = dotted(path);
    let refused = read(probe).ok().and_then(|config| config.validate().err());
    !refused.is_some_and(|e| e.key().is_some_and(|k| k.starts_with(&key)))
}

/// The generated reference: the keys of a group, with each box's default (`—` where the
/// key does not apply to the group), then the other keys.
pub(super) fn generate() -> Result<String, String> {
    let defaults = tree_of(Config::default()).map_err(|e| e.to_string())?;
    let missing = |key: &Key| format!("`{}` has no doc on its field", key.dotted());
    let mut out = String::new();
    let columns: Vec<String> = BoxKind::ALL
        .iter()
        .map(|g| format!("`{}`", g.key()))
        .collect();
    let _ = writeln!(out, "| key | {} | what it is |", columns.join(" | "));
    let _ = writeln!(out, "| --- |{} --- |", " --- |".repeat(BoxKind::ALL.len()));
    let seeds: Vec<String> = BoxKind::ALL
        .iter()
        .map(|g| format!("`{}`", g.seed_key()))
        .collect();
    let _ = writeln!(
        out,
        "| in seed 000's names | {} | every key of the group works under either name |",
        seeds.join(" | ")
    );
    let vars: Vec<String> = BoxKind::ALL
        .iter()
        .map(|g| {
            let var = |name: &str| super::schema::env_var(&name.split('.').collect::<Vec<_>>());
            format!("`{}_<KEY>`, `{}_<KEY>`", var(g.key()), var(g.seed_key()))
        })
        .collect();
    let _ = writeln!(
        out,
        "| environment | {} | `<KEY>`: the key upper-cased, `-` as `_` |",
        vars.join(" | ")
    );
    let first = BoxKind::OutboxEvents.key();
    let in_group = |key: &&Key| dotted(&key.path()[..key.path().len() - 1]) == first;
    for key in keys().iter().filter(in_group) {
        let name = key.path().last().copied().unwrap_or_default();
        let cells: Vec<String> = BoxKind::ALL
            .iter()
            .map(|g| {
                let path: Vec<&str> = g.key().split('.').chain([name]).collect();
                if key.is_table() && !takes_entries(&defaults, &path) {
                    return "—".to_owned();
                }
                shown(defaults.get(&path))
            })
            .collect();
        let doc = doc_of(key).ok_or_else(|| missing(key))?;
        let _ = writeln!(out, "| `{name}` | {} | {doc} |", cells.join(" | "));
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "| key | default | environment | what it is |");
    let _ = writeln!(out, "| --- | --- | --- | --- |");
    let grouped = |key: &Key| {
        let parent = dotted(&key.path()[..key.path().len() - 1]);
        BoxKind::ALL.iter().any(|g| g.key() == parent)
    };
    for key in keys().iter().filter(|k| !grouped(k)) {
        let doc = doc_of(key).ok_or_else(|| missing(key))?;
        let mut doc = doc;
        let mut var = format!("`{}`", key.env_var());
        if let Some(seed) = key.seed() {
            var.push_str(&format!(", `{}`", seed.env_var()));
            let seed = format!(" (seed 000: `{}`)", seed.dotted());
            match doc.strip_suffix('.') {
                Some(sentence) => doc = format!("{sentence}{seed}."),
                None => doc.push_str(&seed),
            }
        }
        let default = shown(defaults.get(key.path()));
        let _ = writeln!(out, "| `{}` | {default} | {var} | {doc} |", key.dotted());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_field_is_a_key() {
        let names = |docs: &[(&str, &[&str])]| -> Vec<String> {
            docs.iter().map(|(f, _)| f.replace('_', "-")).collect()
        };
        let group: Vec<String> = keys()
            .iter()
            .filter(|k| k.path().starts_with(&["events", "outbox"]))
            .map(|k| k.path()[2].to_owned())
            .collect();
        assert_eq!(names(WorkerConfig::FIELD_DOCS), group);
        let staleness: Vec<String> = keys()
            .iter()
            .filter(|k| k.path().starts_with(&["staleness"]))
            .map(|k| k.path()[1].to_owned())
            .collect();
        assert_eq!(names(Staleness::FIELD_DOCS), staleness);
        for key in keys() {
            assert!(
                doc_of(key).is_some_and(|d| !d.is_empty()),
                "{}",
                key.dotted()
            );
        }
    }

    /// The README's reference is what [`generate`] makes; with `UPDATE_README=1` this test
    /// rewrites it instead of failing.
    #[test]
    fn the_readme_key_reference_is_generated_from_the_field_docs() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
        let readme = std::fs::read_to_string(path).unwrap_or_default();
        let generated = generate().unwrap_or_else(|e| panic!("{e}"));
        let Some((before, rest)) = readme.split_once(BEGIN) else {
            panic!("README.md has no line `{BEGIN}`")
        };
        let Some((_, after)) = rest.split_once(END) else {
            panic!("README.md has no line `{END}`")
        };
        let expected = format!("{before}{BEGIN}\n{generated}{END}{after}");
        if readme == expected {
            return;
        }
        if std::env::var_os("UPDATE_README").is_some() {
            let written = std::fs::write(path, expected);
            assert!(written.is_ok(), "{written:?}");
            return;
        }
        panic!(
            "the configuration keys in README.md are out of date with the field docs and \
             defaults in crates/bandeja-core/src/vocabulary/config: run \
             `UPDATE_README=1 cargo test -p bandeja-core readme` and commit README.md"
        );
    }
}
