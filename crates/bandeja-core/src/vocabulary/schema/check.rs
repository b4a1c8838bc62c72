//! The check of `bandeja schema check`: the versions of each message type compared in
//! turn, and the current schemas compared with a committed snapshot.
//!
//! - **Version bumps** (`N` to the next version present): compared and reported. A bump
//!   may break — that is what bumps are for — so it never fails the check; an upcaster
//!   from `N` makes its backward-breaking changes readable.
//! - **Against the snapshot**, the same type and version: a breaking change fails the
//!   check (it needed a version bump); a compatible one is reported. A version in the
//!   snapshot but no longer registered fails too: stored rows may still be at it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::change::Change;
use super::compat::compare;
use super::report::Report;
use super::snapshot::{SchemaSnapshot, VersionEntry};

/// One result of the check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "finding", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Finding {
    /// Version `from` compared with the next version present, `to` (informational).
    VersionBump {
        /// The message type.
        message_type: String,
        /// The older version.
        from: u32,
        /// The newer version.
        to: u32,
        /// Whether version `to` has an upcaster from `from`: old messages are turned
        /// into the new shape before decoding, so backward-breaking changes are handled.
        upcaster: bool,
        /// What changed.
        changes: Vec<Change>,
    },
    /// One version compared with the snapshot's copy of it: fails on a breaking change.
    SameVersion {
        /// The message type.
        message_type: String,
        /// The version.
        version: u32,
        /// What changed since the snapshot.
        changes: Vec<Change>,
    },
    /// A version that is not in the snapshot yet (informational).
    VersionAdded {
        /// The message type.
        message_type: String,
        /// The version.
        version: u32,
    },
    /// A version in the snapshot that is no longer registered: fails.
    VersionRemoved {
        /// The message type.
        message_type: String,
        /// The version.
        version: u32,
    },
    /// Two schemas that could not be compared (a `$ref` to nothing…): fails.
    Unreadable {
        /// The message type.
        message_type: String,
        /// The version (the newer one, for a bump).
        version: u32,
        /// What is wrong.
        reason: String,
    },
}

impl Finding {
    /// Whether this finding fails the check.
    #[must_use]
    pub fn failed(&self) -> bool {
        match self {
            Finding::SameVersion { changes, .. } => changes.iter().any(Change::is_breaking),
            Finding::VersionRemoved { .. } | Finding::Unreadable { .. } => true,
            Finding::VersionBump { .. } | Finding::VersionAdded { .. } => false,
        }
    }
}

/// Checks `current` (the schemas the application exports now): each type's consecutive
/// versions, and, with `against` (a committed snapshot), every version it holds.
///
/// ```
/// use bandeja_core::schema::{check, SchemaSnapshot, VersionEntry};
/// use serde_json::json;
///
/// let entry = |schema| VersionEntry { upcasters_from: vec![], schema };
/// let mut committed = SchemaSnapshot::new();
/// committed.insert("shop.OrderPlaced", 1, entry(json!({
///     "type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"],
/// })));
/// let mut current = SchemaSnapshot::new();
/// // `order_id` became a string at the same version: a consumer of either breaks.
/// current.insert("shop.OrderPlaced", 1, entry(json!({
///     "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"],
/// })));
/// let report = check(&current, Some(&committed));
/// assert!(report.failed());
/// let changed = "order_id: type changed from integer to string";
/// assert!(report.lines().iter().any(|l| l.contains(changed)));
/// ```
#[must_use]
pub fn check(current: &SchemaSnapshot, against: Option<&SchemaSnapshot>) -> Report {
    let empty = BTreeMap::new();
    let names: BTreeSet<&str> = current
        .types()
        .chain(against.into_iter().flat_map(SchemaSnapshot::types))
        .map(|(name, _)| name)
        .collect();
    let mut findings = Vec::new();
    for name in names {
        let now = current.versions(name).unwrap_or(&empty);
        let before = against.and_then(|s| s.versions(name));
        // The versions in order, each with its current schema, or the snapshot's for a
        // version no longer registered.
        let mut merged: BTreeMap<u32, &VersionEntry> = before
            .unwrap_or(&empty)
            .iter()
            .map(|(v, e)| (*v, e))
            .collect();
        merged.extend(now.iter().map(|(v, e)| (*v, e)));
        let mut previous: Option<(u32, &VersionEntry)> = None;
        for (version, entry) in merged {
            if let Some((from, older)) = previous {
                findings.push(bump(name, from, older, version, entry));
            }
            if against.is_some() {
                let before = before.and_then(|b| b.get(&version));
                findings.push(same_version(name, version, before, now.get(&version)));
            }
            previous = Some((version, entry));
        }
    }
    Report::new(findings, against.is_some())
}

/// Version `from` against `to`.
fn bump(name: &str, from: u32, older: &VersionEntry, to: u32, newer: &VersionEntry) -> Finding {
    match compare(&older.schema, &newer.schema) {
        Ok(changes) => Finding::VersionBump {
            message_type: name.to_owned(),
            from,
            to,
            upcaster: newer.upcasters_from.contains(&from),
            changes,
        },
        Err(reason) => Finding::Unreadable {
            message_type: name.to_owned(),
            version: to,
            reason: format!("comparing version {from} with {to}: {reason}"),
        },
    }
}

/// One version in the snapshot (`before`) and now (`now`).
fn same_version(
    name: &str,
    version: u32,
    before: Option<&VersionEntry>,
    now: Option<&VersionEntry>,
) -> Finding {
    let message_type = name.to_owned();
    match (before, now) {
        (Some(before), Some(now)) => match compare(&before.schema, &now.schema) {
            Ok(changes) => Finding::SameVersion {
                message_type,
                version,
                changes,
            },
            Err(reason) => Finding::Unreadable {
                message_type,
                version,
                reason: format!("comparing it with the snapshot: {reason}"),
            },
        },
        (Some(_), None) => Finding::VersionRemoved {
            message_type,
            version,
        },
        (None, _) => Finding::VersionAdded {
            message_type,
            version,
        },
    }
}
