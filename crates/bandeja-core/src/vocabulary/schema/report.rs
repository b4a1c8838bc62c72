//! The result of a [`check`](super::check): whether it failed, as lines a person reads
//! and as one JSON document.

use serde::Serialize;

use super::change::Change;
use super::check::Finding;

/// What [`check`](super::check) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    findings: Vec<Finding>,
    against_snapshot: bool,
}

impl Report {
    pub(super) fn new(findings: Vec<Finding>, against_snapshot: bool) -> Report {
        Report {
            findings,
            against_snapshot,
        }
    }

    /// Whether something breaks without a version bump (or a version was dropped): the
    /// command exits non-zero.
    #[must_use]
    pub fn failed(&self) -> bool {
        self.findings.iter().any(Finding::failed)
    }

    /// The findings, by message type and version.
    #[must_use]
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// The report as text: a line per finding, its changes indented below, what to do
    /// under a failure, and the [`summary`](Self::summary) last.
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for finding in &self.findings {
            render(finding, &mut lines);
        }
        lines.push(self.summary());
        lines
    }

    /// One line: `schema check: OK (…)` or `schema check: FAILED (…)` naming what failed.
    #[must_use]
    pub fn summary(&self) -> String {
        let failures: Vec<String> = self
            .findings
            .iter()
            .filter(|f| f.failed())
            .map(failure)
            .collect();
        if !failures.is_empty() {
            return format!("schema check: FAILED ({})", failures.join("; "));
        }
        let types: std::collections::BTreeSet<&str> =
            self.findings.iter().map(message_type).collect();
        let against = if self.against_snapshot {
            ", compared with the snapshot"
        } else {
            ""
        };
        format!(
            "schema check: OK ({} message {}{against}: nothing breaks without a version bump)",
            types.len(),
            if types.len() == 1 { "type" } else { "types" }
        )
    }
}

impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Item<'a> {
            #[serde(flatten)]
            finding: &'a Finding,
            failed: bool,
        }
        #[derive(Serialize)]
        struct Json<'a> {
            ok: bool,
            summary: String,
            findings: Vec<Item<'a>>,
        }
        Json {
            ok: !self.failed(),
            summary: self.summary(),
            findings: self
                .findings
                .iter()
                .map(|finding| Item {
                    finding,
                    failed: finding.failed(),
                })
                .collect(),
        }
        .serialize(serializer)
    }
}

fn message_type(finding: &Finding) -> &str {
    match finding {
        Finding::VersionBump { message_type, .. }
        | Finding::SameVersion { message_type, .. }
        | Finding::VersionAdded { message_type, .. }
        | Finding::VersionRemoved { message_type, .. }
        | Finding::Unreadable { message_type, .. } => message_type,
    }
}

/// A failed finding in a few words, for the summary.
fn failure(finding: &Finding) -> String {
    match finding {
        Finding::SameVersion {
            message_type,
            version,
            changes,
        } => {
            let breaking = changes.iter().filter(|c| c.is_breaking()).count();
            let fields: Vec<&str> = changes
                .iter()
                .filter(|c| c.is_breaking())
                .map(|c| {
                    if c.path().is_empty() {
                        "(the payload)"
                    } else {
                        c.path()
                    }
                })
                .collect();
            format!(
                "{message_type} v{version}: {breaking} breaking {} without a version bump, at {}",
                if breaking == 1 { "change" } else { "changes" },
                fields.join(", ")
            )
        }
        Finding::VersionRemoved {
            message_type,
            version,
        } => format!("{message_type} v{version}: no longer registered"),
        Finding::Unreadable {
            message_type,
            version,
            ..
        } => format!("{message_type} v{version}: unreadable schema"),
        Finding::VersionBump { .. } | Finding::VersionAdded { .. } => String::new(),
    }
}

/// The lines of one finding.
fn render(finding: &Finding, lines: &mut Vec<String>) {
    match finding {
        Finding::VersionBump {
            message_type,
            from,
            to,
            upcaster,
            changes,
        } => {
            let head = format!("{message_type} v{from} -> v{to} (version bump)");
            let breaking = changes.iter().any(Change::is_breaking);
            let verdict = match (changes.is_empty(), breaking) {
                (true, _) => "no schema change".to_owned(),
                (false, true) => format!("{}, breaking: allowed by the bump", count(changes)),
                (false, false) => format!("{}, compatible", count(changes)),
            };
            let through = if *upcaster {
                format!("; the upcaster from v{from} turns v{from} messages into v{to}")
            } else {
                String::new()
            };
            lines.push(format!("{head}: {verdict}{through}"));
            for change in changes {
                lines.push(format!("  {}", change_line(change, *upcaster)));
            }
        }
        Finding::SameVersion {
            message_type,
            version,
            changes,
        } => {
            let head = format!("{message_type} v{version}");
            if changes.is_empty() {
                lines.push(format!("{head}: unchanged since the snapshot"));
                return;
            }
            if finding.failed() {
                lines.push(format!(
                    "{head}: BREAKING change since the snapshot without a version bump"
                ));
            } else {
                lines.push(format!(
                    "{head}: {} since the snapshot, compatible (refresh the snapshot to record it)",
                    count(changes)
                ));
            }
            for change in changes {
                let mark = if change.is_breaking() {
                    "BREAKING "
                } else {
                    ""
                };
                lines.push(format!("  {mark}{}", change_line(change, false)));
            }
            if finding.failed() {
                lines.push(format!(
                    "  hint: make it a new version of {message_type} (VERSION = {}, keeping the \
                     old shape registered as a separate type at version {version}, with an \
                     upcaster if new consumers must read old rows), or undo the change",
                    version + 1
                ));
            }
        }
        Finding::VersionAdded {
            message_type,
            version,
        } => lines.push(format!(
            "{message_type} v{version}: new, not in the snapshot yet (refresh the snapshot to \
             guard it)"
        )),
        Finding::VersionRemoved {
            message_type,
            version,
        } => {
            lines.push(format!(
                "{message_type} v{version}: REMOVED: in the snapshot but no longer registered; \
                 stored messages may still be at version {version}"
            ));
            lines.push(format!(
                "  hint: keep registering a type for version {version} (same TYPE, VERSION = \
                 {version}) while rows at that version may remain; once none can, refresh the \
                 snapshot"
            ));
        }
        Finding::Unreadable {
            message_type,
            version,
            reason,
        } => lines.push(format!(
            "{message_type} v{version}: cannot compare the schemas: {reason}"
        )),
    }
}

/// `1 change`, `3 changes`.
fn count(changes: &[Change]) -> String {
    match changes.len() {
        1 => "1 change".to_owned(),
        n => format!("{n} changes"),
    }
}

/// One change: `path: what (backward: yes, forward: NO)`; with an upcaster, a
/// backward-breaking change reads "through the upcaster".
fn change_line(change: &Change, upcaster: bool) -> String {
    if upcaster && !change.backward() {
        let path = if change.path().is_empty() {
            "(the payload)"
        } else {
            change.path()
        };
        let forward = if change.forward() { "yes" } else { "NO" };
        return format!(
            "{path}: {} (backward: through the upcaster, forward: {forward})",
            change.kind()
        );
    }
    change.to_string()
}
