//! What the transitions log (captured by a test subscriber) and count (a test recorder).

use std::sync::{Arc, Mutex};

use metrics::{Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, SharedString, Unit};

use super::*;
use crate::config::WorkerConfig;
use crate::error::FailureKind;
use crate::vocabulary::test_log::logged;

/// Counter increments by name and labels.
#[derive(Clone, Default)]
struct Counts(Arc<Mutex<Vec<(Key, u64)>>>);

struct Increments {
    key: Key,
    counts: Counts,
}

impl CounterFn for Increments {
    fn increment(&self, value: u64) {
        if let Ok(mut counts) = self.counts.0.lock() {
            counts.push((self.key.clone(), value));
        }
    }
    fn absolute(&self, _value: u64) {}
}

impl metrics::Recorder for Counts {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Increments {
            key: key.clone(),
            counts: self.clone(),
        }))
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

fn row(retry_count: u32, takeovers: u32, holder: Option<&str>) -> StoredMessage {
    StoredMessage {
        retry_count,
        takeovers,
        taken_over_from: holder.map(str::to_owned),
        ..crate::record::claimed_row_for_tests()
    }
}

#[test]
fn a_takeover_is_logged_at_warn_with_the_message_and_counted() {
    let (taken, unknown, ordinary) = (
        row(0, 2, Some("host-1#2a.7")),
        row(0, 1, Some("?")),
        row(0, 0, None),
    );
    let counts = Counts::default();
    let text = logged(|| {
        metrics::with_local_recorder(&counts, || {
            taken_over(&[taken.clone(), unknown.clone(), ordinary]);
        });
    });
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "one line per row taken over: {text}");
    let first = lines[0];
    assert!(first.contains("WARN"), "{text}");
    assert!(first.contains("lease taken over"), "{text}");
    assert!(
        first.contains(&format!("message_id={}", taken.record.id)),
        "{text}"
    );
    assert!(first.contains("box=inbox_events"), "{text}");
    assert!(first.contains("subscriber=\"s\""), "{text}");
    assert!(first.contains("previous_holder=\"host-1#2a.7\""), "{text}");
    assert!(first.contains("takeovers=2"), "{text}");
    assert!(
        !lines[1].contains("previous_holder"),
        "an unknown holder is left out: {text}"
    );

    let counts = counts.0.lock().map(|c| c.clone()).unwrap_or_default();
    assert_eq!(counts.len(), 2, "{counts:?}");
    let (key, n) = &counts[0];
    assert_eq!((key.name(), *n), (telemetry::TAKEOVERS, 1));
    let labels: Vec<(&str, &str)> = key.labels().map(|l| (l.key(), l.value())).collect();
    assert_eq!(
        labels,
        [
            ("box", "inbox_events"),
            ("type", taken.record.message_type.as_str()),
            ("subscriber", "s"),
        ]
    );
}

#[test]
fn exhausting_the_retries_logs_failed_after_n_attempts() {
    let config = WorkerConfig::events_inbox_defaults();
    let last = row(config.max_retries, 0, None);
    let text = logged(|| {
        let outcome = crate::attempt::failure(
            &last,
            &config,
            FailureKind::Retriable,
            "card declined".to_owned(),
        );
        assert!(matches!(outcome.resolution, Resolution::Failed { .. }));
    });
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("WARN"), "{text}");
    let attempts = config.max_retries + 1;
    assert!(
        text.contains(&format!("message FAILED after {attempts} attempts")),
        "{text}"
    );
    assert!(
        text.contains(&format!("message_id={}", last.record.id)),
        "{text}"
    );
    assert!(
        text.contains(&format!("message_type={}", last.record.message_type)),
        "{text}"
    );
    assert!(text.contains("subscriber=\"s\""), "{text}");
    assert!(text.contains("error=card declined"), "{text}");
    assert!(!text.contains("will retry"), "{text}");
}

#[test]
fn a_retried_attempt_says_when_and_a_permanent_error_says_not_retried() {
    let config = WorkerConfig::events_inbox_defaults();
    let first = row(0, 0, None);
    let retried = logged(|| {
        crate::attempt::failure(&first, &config, FailureKind::Retriable, "busy".to_owned());
    });
    assert!(retried.contains("INFO"), "{retried}");
    assert!(
        retried.contains("attempt 1 failed; will retry at 20"),
        "{retried}"
    );
    assert!(!retried.contains("FAILED"), "{retried}");

    let permanent = logged(|| {
        crate::attempt::failure(&first, &config, FailureKind::Permanent, "bad".to_owned());
    });
    assert!(permanent.contains("WARN"), "{permanent}");
    assert!(
        permanent.contains("message FAILED at attempt 1, not retried"),
        "{permanent}"
    );
}

#[test]
fn a_long_error_is_cut_in_the_log_line() {
    let long = "é".repeat(LOGGED_ERROR_LEN);
    let cut = short(&long);
    assert!(
        cut.len() <= LOGGED_ERROR_LEN + '…'.len_utf8(),
        "{}",
        cut.len()
    );
    assert!(cut.ends_with('…'));
    assert_eq!(short("short"), "short");
}
