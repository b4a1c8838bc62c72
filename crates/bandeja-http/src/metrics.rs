//! `GET /metrics`: one Prometheus text exposition —
//!
//! 1. what the installed recorder holds ([`install_recorder`]): the counters and latency
//!    histograms the workers of this process record through the `metrics` facade (names in
//!    [`bandeja_core::telemetry`]), and anything else the application records;
//! 2. `# HELP`/`# TYPE` for each runtime family nothing was recorded in yet (so every
//!    family exists in every binary; in `bandeja serve`, which runs no workers, they stay
//!    without samples);
//! 3. gauges computed at scrape time from the database, the same whichever process
//!    serves them: rows per status, stuck rows, rows taken over and the lag of each box,
//!    pending and FAILED rows and live processes of each subscription, and whether the
//!    database answers.

mod families;
mod gauges;

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use bandeja_core::admin::Admin;
use bandeja_core::telemetry;
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
/// PENDING or PROCESSING inbox rows of each subscription. Labels: `kind` (`event`,
/// `command`), `type`, `subscriber`, `tenant` (empty: a subscription to every tenant).
pub const SUBSCRIPTION_PENDING: &str = "bandeja_subscription_pending_rows";
/// FAILED inbox rows of each subscription; labels as [`SUBSCRIPTION_PENDING`].
pub const SUBSCRIPTION_FAILED: &str = "bandeja_subscription_failed_rows";
/// Live processes (by their heartbeats) that run each subscription's subscriber; labels as
/// [`SUBSCRIPTION_PENDING`].
pub const SUBSCRIPTION_PROCESSES: &str = "bandeja_subscription_processes";

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
/// Held while installing, so that concurrent first calls install one recorder.
static INSTALLING: Mutex<()> = Mutex::new(());

/// A Prometheus builder with bandeja's histogram buckets ([`telemetry::LATENCY_BUCKETS`]
/// for `bandeja_commit_to_*`, so the latency histograms render as histograms, not
/// summaries), for an application that installs its own recorder (its own buckets, a push
/// gateway, …): install it, call [`telemetry::describe`], and pass its handle to
/// [`HttpOptions::metrics`](crate::HttpOptions::metrics).
pub fn recorder_builder() -> Result<PrometheusBuilder, MetricsError> {
    Ok(PrometheusBuilder::new().set_buckets_for_metric(
        Matcher::Prefix("bandeja_commit_to_".to_owned()),
        telemetry::LATENCY_BUCKETS,
    )?)
}

/// Installs a Prometheus recorder ([`recorder_builder`]) as the process's global `metrics`
/// recorder, registers the runtime's descriptions, and starts a background thread that
/// compacts histograms every few seconds. Pass the handle to
/// [`HttpOptions::metrics`](crate::HttpOptions::metrics).
///
/// Once per process: later (or concurrent) calls return the same handle. When another
/// recorder is already installed — the application's own — it is left alone and the call
/// fails with [`MetricsError::OtherRecorder`]: pass that recorder's handle instead (or run
/// without one: `/metrics` then shows the families and the database gauges).
pub fn install_recorder() -> Result<PrometheusHandle, MetricsError> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let _installing = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let recorder = recorder_builder()?.build_recorder();
    let handle = recorder.handle();
    if metrics::set_global_recorder(recorder).is_err() {
        return Err(MetricsError::OtherRecorder);
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

/// `GET /metrics`.
pub(crate) async fn render<A: Admin>(state: Shared<A>) -> Response {
    let options = &state.options;
    // Not by tenant: one entry per box.
    let counters = crate::boxes::counters(&state.admin, options, false)
        .await
        .map_err(|reason| tracing::warn!(%reason, "metrics scrape could not read the box counters"))
        .ok();
    let views = match &counters {
        Some(_) => {
            let read = state.admin.subscriptions(options.live_for);
            match tokio::time::timeout(options.health_timeout, read).await {
                Ok(Ok(views)) => Some(views),
                Ok(Err(error)) => {
                    tracing::warn!(%error, "metrics scrape could not read the subscriptions");
                    None
                }
                Err(_) => {
                    tracing::warn!(
                        "metrics scrape: the subscriptions were not read within the health timeout"
                    );
                    None
                }
            }
        }
        None => None,
    };
    let mut body = options
        .metrics
        .as_ref()
        .map(PrometheusHandle::render)
        .unwrap_or_default();
    if !body.is_empty() && !body.ends_with('\n') {
        body.push('\n');
    }
    let missing = families::missing_from(&body);
    body.push_str(&missing);
    body.push_str(&gauges::boxes(counters.as_deref()));
    body.push_str(&gauges::subscriptions(views.as_deref()));
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}
