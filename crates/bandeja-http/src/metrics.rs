//! `GET /metrics`: Prometheus text — the counters and latency histograms the workers
//! record through the `metrics` facade (names in [`bandeja_core::telemetry`]), followed by
//! gauges computed at scrape time from the box counters: rows per status, stuck rows, rows
//! taken over and the lag (age of the oldest PENDING row) of each box, and whether the
//! database answers.

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::time::Duration;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use bandeja_core::admin::{Admin, BoxCounters};
use bandeja_core::telemetry;
use chrono::Utc;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::router::Shared;

/// Seconds since the PENDING row of each box left alone the longest last changed
/// (`oldest_pending_at` of `GET /boxes`; 0 when none is pending).
pub const LAG: &str = "bandeja_lag_seconds";
/// Rows of each box by status (`status` label: PENDING, PROCESSING, FAILED).
pub const ROWS: &str = "bandeja_box_rows";
/// PENDING rows unchanged for longer than the stuck threshold, per box.
pub const STUCK: &str = "bandeja_box_stuck_rows";
/// PENDING, PROCESSING or FAILED rows whose lease was taken over at least once, per box
/// (the `taken_over` counter of `GET /boxes`).
pub const TAKEN_OVER: &str = "bandeja_box_taken_over_rows";
/// 1 when the database answered the scrape's queries, 0 otherwise.
pub const DATABASE_UP: &str = "bandeja_database_up";

/// Why the Prometheus recorder could not be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// Another `metrics` recorder is installed in this process: pass its Prometheus
    /// handle to [`HttpOptions::metrics`](crate::HttpOptions::metrics) instead.
    #[error("another metrics recorder is already installed in this process: pass its PrometheusHandle to HttpOptions::metrics instead")]
    OtherRecorder,
    /// The exporter rejected its configuration.
    #[error("cannot configure the Prometheus recorder: {0}")]
    Build(#[from] metrics_exporter_prometheus::BuildError),
}

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs (once per process; later calls return the same handle) a Prometheus recorder
/// as the global `metrics` recorder, with histogram buckets for bandeja's latency
/// histograms, and starts a background thread that compacts histograms every few seconds.
/// Pass the handle to [`HttpOptions::metrics`](crate::HttpOptions::metrics).
pub fn install_recorder() -> Result<PrometheusHandle, MetricsError> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Prefix("bandeja_commit_to_".to_owned()),
            telemetry::LATENCY_BUCKETS,
        )?
        .build_recorder();
    let handle = recorder.handle();
    if metrics::set_global_recorder(recorder).is_err() {
        // Lost a race with another caller of this function, or someone else's recorder.
        return HANDLE.get().cloned().ok_or(MetricsError::OtherRecorder);
    }
    let handle = HANDLE.get_or_init(|| handle).clone();
    telemetry::describe();
    let upkeep = handle.clone();
    let spawned = std::thread::Builder::new()
        .name("bandeja-metrics-upkeep".to_owned())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_secs(5));
            upkeep.run_upkeep();
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "could not start the metrics upkeep thread; histograms are compacted at each scrape");
    }
    Ok(handle)
}

/// The gauges computed from the box counters, in Prometheus text.
fn gauges(counters: Option<&[BoxCounters]>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP {DATABASE_UP} 1 when the database answered this scrape"
    );
    let _ = writeln!(out, "# TYPE {DATABASE_UP} gauge");
    let _ = writeln!(out, "{DATABASE_UP} {}", u8::from(counters.is_some()));
    let Some(counters) = counters else {
        return out;
    };
    let now = Utc::now();
    let _ = writeln!(
        out,
        "# HELP {LAG} Seconds since the longest-waiting PENDING row of the box last changed"
    );
    let _ = writeln!(out, "# TYPE {LAG} gauge");
    for c in counters {
        let lag = c
            .oldest_pending_at
            .and_then(|at| (now - at).to_std().ok())
            .map_or(0.0, |d| d.as_secs_f64());
        let _ = writeln!(out, "{LAG}{{box=\"{}\"}} {lag}", c.box_kind);
    }
    let _ = writeln!(out, "# HELP {ROWS} Rows of the box by status");
    let _ = writeln!(out, "# TYPE {ROWS} gauge");
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
    let _ = writeln!(
        out,
        "# HELP {STUCK} PENDING rows unchanged for longer than the stuck threshold"
    );
    let _ = writeln!(out, "# TYPE {STUCK} gauge");
    for c in counters {
        let _ = writeln!(out, "{STUCK}{{box=\"{}\"}} {}", c.box_kind, c.stuck);
    }
    let _ = writeln!(
        out,
        "# HELP {TAKEN_OVER} PENDING, PROCESSING or FAILED rows whose lease was taken over at least once"
    );
    let _ = writeln!(out, "# TYPE {TAKEN_OVER} gauge");
    for c in counters {
        let _ = writeln!(
            out,
            "{TAKEN_OVER}{{box=\"{}\"}} {}",
            c.box_kind, c.taken_over
        );
    }
    out
}

/// `GET /metrics`.
pub(crate) async fn render<A: Admin>(state: Shared<A>) -> Response {
    // Not by tenant: one entry per box.
    let counters = crate::boxes::counters(&state.admin, &state.options, false)
        .await
        .map_err(|reason| tracing::warn!(%reason, "metrics scrape could not read the box counters"))
        .ok();
    let mut body = state
        .options
        .metrics
        .as_ref()
        .map(PrometheusHandle::render)
        .unwrap_or_default();
    if !body.is_empty() && !body.ends_with('\n') {
        body.push('\n');
    }
    body.push_str(&gauges(counters.as_deref()));
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bandeja_core::BoxKind;

    #[test]
    fn gauges_show_lag_rows_stuck_and_taken_over_per_box() {
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
        let text = gauges(Some(&counters));
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
            gauges(None).trim_end().lines().last(),
            Some("bandeja_database_up 0")
        );
    }
}
