//! The gauges `/metrics` computes at each scrape from the database, in Prometheus text:
//! per box (rows by status, stuck rows, rows taken over, lag), per subscription (its
//! pending and FAILED inbox rows, the live processes that run it), and whether the
//! database answered. They describe the whole database, whichever process serves them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bandeja_core::admin::{BoxCounters, SubscriptionView};
use chrono::Utc;

use super::{
    DATABASE_UP, LAG, ROWS, STUCK, SUBSCRIPTION_FAILED, SUBSCRIPTION_PENDING,
    SUBSCRIPTION_PROCESSES, TAKEN_OVER,
};

/// A label value, escaped as the text format wants (`\\`, `\"`, `\n`).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
}

/// The box gauges (only `bandeja_database_up 0` when the counters could not be read).
pub(crate) fn boxes(counters: Option<&[BoxCounters]>) -> String {
    let mut out = String::new();
    family(
        &mut out,
        DATABASE_UP,
        "1 when the database answered this scrape",
    );
    let _ = writeln!(out, "{DATABASE_UP} {}", u8::from(counters.is_some()));
    let Some(counters) = counters else {
        return out;
    };
    let now = Utc::now();
    family(
        &mut out,
        LAG,
        "Seconds since the longest-waiting PENDING row of the box last changed",
    );
    for c in counters {
        let lag = c
            .oldest_pending_at
            .and_then(|at| (now - at).to_std().ok())
            .map_or(0.0, |d| d.as_secs_f64());
        let _ = writeln!(out, "{LAG}{{box=\"{}\"}} {lag}", c.box_kind);
    }
    family(&mut out, ROWS, "Rows of the box by status");
    for c in counters {
        for (status, n) in [
            ("PENDING", c.pending),
            ("PROCESSING", c.processing),
            ("FAILED", c.failed),
        ] {
            let _ = writeln!(
                out,
                "{ROWS}{{box=\"{}\",status=\"{status}\"}} {n}",
                c.box_kind
            );
        }
    }
    family(
        &mut out,
        STUCK,
        "PENDING rows unchanged for longer than the stuck threshold",
    );
    for c in counters {
        let _ = writeln!(out, "{STUCK}{{box=\"{}\"}} {}", c.box_kind, c.stuck);
    }
    family(
        &mut out,
        TAKEN_OVER,
        "PENDING, PROCESSING or FAILED rows whose lease was taken over at least once",
    );
    for c in counters {
        let _ = writeln!(
            out,
            "{TAKEN_OVER}{{box=\"{}\"}} {}",
            c.box_kind, c.taken_over
        );
    }
    out
}

/// What one subscription shows: live rows, FAILED rows, live processes.
type Tally = [u64; 3];

/// The subscription gauges: the families always, their samples when `views` were read.
pub(crate) fn subscriptions(views: Option<&[SubscriptionView]>) -> String {
    // One series per label set (a store lists each subscription once; `max` keeps the
    // exposition valid even if one came twice).
    let mut by_labels: BTreeMap<String, Tally> = BTreeMap::new();
    for view in views.unwrap_or_default() {
        let labels = format!(
            "kind=\"{}\",type=\"{}\",subscriber=\"{}\",tenant=\"{}\"",
            view.kind.as_str(),
            escape(&view.message_type),
            escape(&view.subscriber),
            escape(view.tenant.as_deref().unwrap_or(""))
        );
        let processes = u64::try_from(view.processes.len()).unwrap_or(u64::MAX);
        let tally = by_labels.entry(labels).or_default();
        for (kept, seen) in tally.iter_mut().zip([view.pending, view.failed, processes]) {
            *kept = (*kept).max(seen);
        }
    }
    let mut out = String::new();
    let gauges = [
        (
            SUBSCRIPTION_PENDING,
            "PENDING or PROCESSING inbox rows of the subscription (tenant empty: every tenant)",
        ),
        (
            SUBSCRIPTION_FAILED,
            "FAILED inbox rows of the subscription (tenant empty: every tenant)",
        ),
        (
            SUBSCRIPTION_PROCESSES,
            "Live processes that run the subscription's subscriber (by their heartbeats)",
        ),
    ];
    for (index, (name, help)) in gauges.into_iter().enumerate() {
        family(&mut out, name, help);
        for (labels, tally) in &by_labels {
            let _ = writeln!(out, "{name}{{{labels}}} {}", tally[index]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bandeja_core::BoxKind;

    #[test]
    fn box_gauges_show_lag_rows_stuck_and_taken_over_per_box() {
        let counters = vec![BoxCounters {
            box_kind: BoxKind::InboxEvents,
            tenant: None,
            pending: 2,
            processing: 1,
            failed: 3,
            stuck: 1,
            taken_over: 2,
            oldest_pending_at: Some(Utc::now() - chrono::Duration::seconds(90)),
            last_processed_at: None,
        }];
        let text = boxes(Some(&counters));
        assert!(text.contains("bandeja_database_up 1"));
        assert!(text.contains("bandeja_box_rows{box=\"inbox_events\",status=\"FAILED\"} 3"));
        assert!(text.contains("bandeja_box_stuck_rows{box=\"inbox_events\"} 1"));
        assert!(text.contains("# TYPE bandeja_box_taken_over_rows gauge"));
        assert!(text.contains("bandeja_box_taken_over_rows{box=\"inbox_events\"} 2"));
        let lag: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("bandeja_lag_seconds{box=\"inbox_events\"} "))
            .and_then(|v| v.parse().ok())
            .unwrap_or_default();
        assert!((90.0..120.0).contains(&lag), "{lag}");
        assert_eq!(
            boxes(None).trim_end().lines().last(),
            Some("bandeja_database_up 0")
        );
    }

    #[test]
    fn label_values_are_escaped_and_families_exist_without_samples() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let text = subscriptions(None);
        assert!(text.contains("# TYPE bandeja_subscription_pending_rows gauge"));
        assert!(!text.lines().any(|l| !l.starts_with('#')), "{text}");
    }
}
