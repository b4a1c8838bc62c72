//! The latency to the completion write: the values the library records into its own
//! commit→handled histogram ([`HANDLE_LATENCY`]) once a batch's completion has committed,
//! kept by a `metrics` recorder this benchmark installs. A live run reports them beside its
//! latency to the handler's call (the effect row), so a figure of ours can stand beside
//! graphile-worker's `trickle` `complete_*` (to its `complete_job` write) over the same
//! interval. Only the workers of this process are seen (`--processes 1`).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bandeja::telemetry::HANDLE_LATENCY;
use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

/// The values kept, in seconds.
#[derive(Default)]
struct Kept(Mutex<Vec<f64>>);

impl HistogramFn for Kept {
    fn record(&self, value: f64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(value);
    }
}

/// Hands out [`Kept`] for the handled-latency histogram, no-op handles for the rest.
struct KeepHandled(Arc<Kept>);

impl Recorder for KeepHandled {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::noop()
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        if key.name() == HANDLE_LATENCY {
            Histogram::from_arc(self.0.clone())
        } else {
            Histogram::noop()
        }
    }
}

static KEPT: OnceLock<Arc<Kept>> = OnceLock::new();

/// Installs the recorder (once per process; later calls do nothing). Call it before the
/// workers start: a histogram registered earlier stays with the recorder of its time.
pub(crate) fn install() {
    KEPT.get_or_init(|| {
        let kept = Arc::new(Kept::default());
        if metrics::set_global_recorder(KeepHandled(kept.clone())).is_err() {
            tracing::warn!(
                "a metrics recorder was installed already: no latency to the completion write"
            );
        }
        kept
    });
}

/// The values kept so far, in milliseconds (unsorted), and forgets them.
pub(crate) fn take_ms() -> Vec<f64> {
    KEPT.get()
        .map(|kept| {
            std::mem::take(&mut *kept.0.lock().unwrap_or_else(PoisonError::into_inner))
                .into_iter()
                .map(|seconds| seconds * 1000.0)
                .collect()
        })
        .unwrap_or_default()
}

/// The JSON fields of the latency to the completion write over `values_ms` (nearest rank,
/// as the report's other percentiles): `completed_p50_ms`, `completed_p99_ms` and how many
/// messages they cover; nothing when none was kept (worker processes of their own).
pub(crate) fn fields(mut values_ms: Vec<f64>) -> serde_json::Value {
    if values_ms.is_empty() {
        return serde_json::json!({});
    }
    values_ms.sort_unstable_by(f64::total_cmp);
    let pick = |percent: usize| {
        let value = crate::run::nearest_rank(&values_ms, percent).unwrap_or_default();
        (value * 1000.0).round() / 1000.0
    };
    serde_json::json!({
        "completed_p50_ms": pick(50),
        "completed_p99_ms": pick(99),
        "completed_count": values_ms.len(),
    })
}
