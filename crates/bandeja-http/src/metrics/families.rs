//! The metric families the runtime describes ([`telemetry::describe`]), collected once
//! with a recorder that only listens to descriptions, so that `/metrics` can show each
//! family (`# HELP`, `# TYPE`) even before anything was recorded in it — always, in a
//! process that runs no workers (`bandeja serve`).

use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};

use bandeja_core::telemetry;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

/// One described family.
#[derive(Debug, Clone)]
pub(crate) struct Family {
    pub(crate) name: String,
    pub(crate) kind: &'static str,
    pub(crate) help: String,
}

/// A recorder that keeps the descriptions and records nothing.
#[derive(Default)]
struct Descriptions(Mutex<Vec<Family>>);

impl Descriptions {
    fn push(&self, name: KeyName, kind: &'static str, help: SharedString) {
        if let Ok(mut families) = self.0.lock() {
            families.push(Family {
                name: name.as_str().to_owned(),
                kind,
                help: help.to_string(),
            });
        }
    }
}

impl Recorder for Descriptions {
    fn describe_counter(&self, key: KeyName, _unit: Option<Unit>, help: SharedString) {
        self.push(key, "counter", help);
    }

    fn describe_gauge(&self, key: KeyName, _unit: Option<Unit>, help: SharedString) {
        self.push(key, "gauge", help);
    }

    fn describe_histogram(&self, key: KeyName, _unit: Option<Unit>, help: SharedString) {
        self.push(key, "histogram", help);
    }

    fn register_counter(&self, _key: &Key, _metadata: &Metadata<'_>) -> Counter {
        Counter::noop()
    }

    fn register_gauge(&self, _key: &Key, _metadata: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _key: &Key, _metadata: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// The runtime's families, in the order it describes them.
pub(crate) fn runtime() -> &'static [Family] {
    static FAMILIES: OnceLock<Vec<Family>> = OnceLock::new();
    FAMILIES.get_or_init(|| {
        let descriptions = Descriptions::default();
        metrics::with_local_recorder(&descriptions, telemetry::describe);
        descriptions.0.into_inner().unwrap_or_default()
    })
}

/// `# HELP` and `# TYPE` lines for each runtime family that `rendered` does not have.
pub(crate) fn missing_from(rendered: &str) -> String {
    let mut out = String::new();
    for family in runtime() {
        let typed = format!("# TYPE {} ", family.name);
        if rendered.lines().any(|line| line.starts_with(&typed)) {
            continue;
        }
        let help = family.help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(out, "# HELP {} {help}", family.name);
        let _ = writeln!(out, "# TYPE {} {}", family.name, family.kind);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_runtime_family_is_described_with_its_type() {
        let families = runtime();
        let kind = |name: &str| families.iter().find(|f| f.name == name).map(|f| f.kind);
        assert_eq!(kind(telemetry::HANDLED), Some("counter"));
        assert_eq!(kind(telemetry::HANDLE_LATENCY), Some("histogram"));
        let text = missing_from("# TYPE bandeja_messages_handled_total counter\n");
        assert!(
            !text.contains("# TYPE bandeja_messages_handled_total"),
            "{text}"
        );
        assert!(text.contains("# TYPE bandeja_commit_to_handled_seconds histogram\n"));
        assert!(text.contains("# HELP bandeja_messages_failed_total "));
    }
}
