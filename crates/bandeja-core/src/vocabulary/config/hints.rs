//! "Did you mean" for unknown keys and variables: the keys known at the place of an
//! unknown one (from serde's field names, the seed's names and the key list), and the
//! nearest of them.

use super::schema::{env_var, schema, seed_names};
use super::{ConfigError, Key, ENV_PREFIX};

/// The top-level table of the seed's names.
const SEED_ROOT: &str = "app";

/// An unknown key written as `written` (segments) in a file, where serde takes `fields`.
pub(super) fn unknown_key(written: &[String], fields: &[&str]) -> ConfigError {
    let parent = &written[..written.len().saturating_sub(1)];
    let mut names: Vec<&str> = Vec::new();
    for name in fields.iter().copied() {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if parent.is_empty() {
        names.push(SEED_ROOT);
    }
    unknown_among(written, parent, &names)
}

/// An unknown key under the seed's `app` table: `written` (segments) matched the seed's
/// names for `depth` segments.
pub(super) fn unknown_seed_key(written: &[String], depth: usize) -> ConfigError {
    let parent = &written[..depth];
    let mut names: Vec<&str> = Vec::new();
    for (seed, _) in seed_names() {
        let parts: Vec<&str> = seed.split('.').collect();
        if parts.len() > depth && parts[..depth].iter().eq(parent.iter()) {
            let name = parts[depth];
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    unknown_among(&written[..=depth], parent, &names)
}

fn unknown_among(written: &[String], parent: &[String], names: &[&str]) -> ConfigError {
    let key = dotted(written);
    let prefix = dotted(parent);
    let full: Vec<String> = names.iter().map(|name| join(&prefix, name)).collect();
    let place = if parent.is_empty() {
        "at the top level".to_owned()
    } else {
        format!("in `{prefix}`")
    };
    let expected = format!("{} {place}", quoted(names));
    ConfigError::unknown_key(key.clone(), nearest(&key, &full), expected)
}

/// An unknown `BANDEJA_` variable.
pub(super) fn unknown_var(name: &str) -> ConfigError {
    let schema = schema();
    // The tables of keys and their variable prefixes, in bandeja's names and the seed's.
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for section in schema.sections.iter().filter(|s| !s.path.is_empty()) {
        let keys: Vec<&Key> = schema
            .keys
            .iter()
            .filter(|k| k.path().len() == section.path.len() + 1)
            .filter(|k| k.path().starts_with(&section.path))
            .collect();
        // Only tables whose every field is a key (the groups, `[staleness]`).
        if keys.is_empty() || keys.len() != section.fields.len() {
            continue;
        }
        let leaves: Vec<String> = keys.iter().map(|k| env_leaf(k.path())).collect();
        sections.push((format!("{}_", env_var(&section.path)), leaves.clone()));
        if let Some(seed) = keys[0].seed() {
            let seed_section = &seed.path()[..seed.path().len() - 1];
            sections.push((format!("{}_", env_var(seed_section)), leaves));
        }
    }
    let within = sections
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix.trim_end_matches('_')));
    let (full, shown): (Vec<String>, String) = match within {
        Some((prefix, leaves)) => {
            let full = leaves.iter().map(|l| format!("{prefix}{l}")).collect();
            (full, format!("{} after `{prefix}`", quoted(leaves)))
        }
        None => {
            let mut full: Vec<String> = Vec::new();
            let mut shown: Vec<String> = Vec::new();
            let seeds = schema.keys.iter().filter_map(Key::seed);
            for key in schema.keys.iter().cloned().chain(seeds) {
                let var = key.env_var();
                let entry = match sections.iter().find(|(p, _)| var.starts_with(p.as_str())) {
                    Some((prefix, _)) => format!("{prefix}<KEY>"),
                    None => var.clone(),
                };
                if !shown.contains(&entry) {
                    shown.push(entry);
                }
                full.push(var);
            }
            (full, quoted(&shown))
        }
    };
    ConfigError::unknown_key(name.to_owned(), nearest(name, &full), shown)
}

/// The last segment of a key's path, in a variable's form.
fn env_leaf(path: &[&str]) -> String {
    let last = path.last().copied().unwrap_or_default();
    env_var(&[last]).trim_start_matches(ENV_PREFIX).to_owned()
}

/// The candidate within two edits of `key`, the nearest first.
fn nearest(key: &str, candidates: &[String]) -> Option<String> {
    candidates
        .iter()
        .filter(|c| edit_distance(c, key) <= 2)
        .min_by_key(|c| edit_distance(c, key))
        .cloned()
}

fn quoted<S: AsRef<str>>(names: &[S]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("`{}`", n.as_ref())).collect();
    names.join(", ")
}

/// A dotted key from its segments, quoting those that are not bare TOML keys.
pub(super) fn dotted<S: AsRef<str>>(path: &[S]) -> String {
    path.iter()
        .fold(String::new(), |key, part| join(&key, part.as_ref()))
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

    #[test]
    fn dotted_keys_quote_what_is_not_bare() {
        assert_eq!(join("", "events"), "events");
        assert_eq!(
            join("commands.topics", "billing"),
            "commands.topics.billing"
        );
        assert_eq!(join("commands.topics", "a b"), "commands.topics.\"a b\"");
        assert_eq!(join("commands.topics", ""), "commands.topics.\"\"");
        assert_eq!(dotted(&["a", "b c"]), "a.\"b c\"");
        assert_eq!(edit_distance("bach-size", "batch-size"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn unknown_variables_list_what_is_known() {
        let error = unknown_var("BANDEJA_LOGGING");
        let hint = error.hint().unwrap_or_default();
        for part in [
            "`BANDEJA_STUCK_THRESHOLD`",
            "`BANDEJA_EVENTS_OUTBOX_<KEY>`",
            "`BANDEJA_COMMANDS_TOPICS`",
            "`BANDEJA_STALENESS_<KEY>`",
            "`BANDEJA_APP_EVENTS_INBOX_PROCESSOR_<KEY>`",
            "`BANDEJA_APP_COMMANDS_TOPICS`",
        ] {
            assert!(hint.contains(part), "{part}: {hint}");
        }
        let error = unknown_var("BANDEJA_STALENESS_PENDNG");
        assert_eq!(error.suggestion(), Some("BANDEJA_STALENESS_PENDING"));
        let hint = error.hint().unwrap_or_default();
        assert!(hint.contains("after `BANDEJA_STALENESS_`"), "{hint}");
    }
}
