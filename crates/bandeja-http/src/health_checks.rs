//! The components of the health endpoints ([`crate::health`]): `db` (the database answers
//! a ping within the health timeout), `boxes` (no PENDING row unchanged for longer than the
//! stuck threshold, measured from its `last_modified_at`), `failed` (no more FAILED rows
//! than the FAILED threshold, when one is set), `workers` (the runtime's liveness probe)
//! and `subscriptions` (no unattended subscription).

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use bandeja_core::admin::{Admin, BoxCounters};
use bandeja_core::config::format_duration;
use bandeja_core::error::StoreError;
use bandeja_core::runtime::Liveness;
use bandeja_core::BoxKind;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::health::{Component, Status};
use crate::options::HttpOptions;

/// `work` before `deadline` (`limit` after the start of the check), its error (or the
/// timeout) as text.
async fn within<T>(
    deadline: tokio::time::Instant,
    limit: Duration,
    work: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, String> {
    match tokio::time::timeout_at(deadline, work).await {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "the database did not answer within {}",
            format_duration(limit)
        )),
    }
}

/// A component that cannot be judged while the database is DOWN.
fn unknown() -> Component {
    Component::new(
        Status::Unknown,
        json!({ "reason": "not checked: the database is unreachable" }),
    )
}

/// One box's verdict, as `components.boxes.details.<box>` (and the earlier `boxes.<box>`).
#[derive(Debug, Serialize)]
struct BoxDetail {
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    pending: u64,
    processing: u64,
    stuck: u64,
    failed: u64,
    taken_over: u64,
    oldest_pending_at: Option<chrono::DateTime<chrono::Utc>>,
    last_processed_at: Option<chrono::DateTime<chrono::Utc>>,
}

fn box_detail(counters: &BoxCounters, threshold: &str) -> BoxDetail {
    let reason = (counters.stuck > 0).then(|| {
        let oldest = counters
            .oldest_pending_at
            .map(|at| format!(" (the oldest unchanged since {})", at.to_rfc3339()))
            .unwrap_or_default();
        format!(
            "{} PENDING row(s) unchanged for longer than the stuck threshold {threshold}{oldest}",
            counters.stuck
        )
    });
    BoxDetail {
        status: if reason.is_some() {
            Status::Down
        } else {
            Status::Up
        },
        reason,
        pending: counters.pending,
        processing: counters.processing,
        stuck: counters.stuck,
        failed: counters.failed,
        taken_over: counters.taken_over,
        oldest_pending_at: counters.oldest_pending_at,
        last_processed_at: counters.last_processed_at,
    }
}

/// What readiness is judged on: the database, and the box counters read from it.
pub(crate) struct Readings {
    db: Component,
    boxes: Component,
    failed: Component,
    /// Each box's detail, by table name (empty when the counters could not be read).
    per_box: Map<String, Value>,
}

impl Readings {
    /// Pings the database, then reads the box counters, both within the health timeout.
    pub(crate) async fn take<A: Admin>(admin: &A, options: &HttpOptions) -> Self {
        let limit = options.health_timeout;
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + limit;
        if let Err(why) = within(deadline, limit, admin.ping()).await {
            return Readings {
                db: Component::new(
                    Status::Down,
                    json!({ "reason": format!("database unreachable: {why}"), "timeout": format_duration(limit) }),
                ),
                boxes: unknown(),
                failed: unknown(),
                per_box: Map::new(),
            };
        }
        let answered_in = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let db = Component::new(
            Status::Up,
            json!({ "answered_in_ms": answered_in, "timeout": format_duration(limit) }),
        );
        let threshold = format_duration(options.stuck_threshold);
        let counters = admin.counters(options.stuck_threshold, false);
        let all = match within(deadline, limit, counters).await {
            Ok(all) => all,
            Err(why) => {
                let boxes = Component::new(
                    Status::Down,
                    json!({ "reason": format!("cannot read the box counters: {why}"), "stuck_threshold": threshold }),
                );
                return Readings {
                    db,
                    boxes,
                    failed: unknown(),
                    per_box: Map::new(),
                };
            }
        };
        let whole: Vec<&BoxCounters> = BoxKind::ALL
            .into_iter()
            .filter_map(|b| all.iter().find(|c| c.box_kind == b && c.tenant.is_none()))
            .collect();
        let mut per_box = Map::new();
        let mut stuck = false;
        for counters in &whole {
            let detail = box_detail(counters, &threshold);
            stuck |= detail.status == Status::Down;
            per_box.insert(
                counters.box_kind.table().to_owned(),
                serde_json::to_value(&detail).unwrap_or(Value::Null),
            );
        }
        let mut details = per_box.clone();
        details.insert("stuck_threshold".to_owned(), Value::from(threshold));
        let reasons: Vec<String> = per_box
            .iter()
            .filter_map(|(table, d)| Some(format!("{table}: {}", d.get("reason")?.as_str()?)))
            .collect();
        if !reasons.is_empty() {
            details.insert("reason".to_owned(), Value::from(reasons.join("; ")));
        }
        let boxes = Component {
            status: if stuck { Status::Down } else { Status::Up },
            details,
        };
        Readings {
            db,
            boxes,
            failed: failed(&whole, options.failed_threshold),
            per_box,
        }
    }

    /// Whether the database answered.
    pub(crate) fn database_up(&self) -> bool {
        self.db.status == Status::Up
    }

    /// `db`, `boxes` and `failed`: the readiness components.
    pub(crate) fn components(&self) -> BTreeMap<&'static str, Component> {
        BTreeMap::from([
            ("db", self.db.clone()),
            ("boxes", self.boxes.clone()),
            ("failed", self.failed.clone()),
        ])
    }

    /// The fields of the earlier `/health` body: `stuck_threshold`, `database` (`status`,
    /// `reason`), `boxes` (per box) and `subscriptions` (when read).
    pub(crate) fn earlier(
        &self,
        options: &HttpOptions,
        subscriptions: Option<Value>,
    ) -> Map<String, Value> {
        let mut database = Map::new();
        database.insert("status".to_owned(), json!(self.db.status));
        if let Some(reason) = self.db.reason() {
            database.insert("reason".to_owned(), Value::from(reason));
        }
        let mut earlier = Map::new();
        earlier.insert(
            "stuck_threshold".to_owned(),
            Value::from(format_duration(options.stuck_threshold)),
        );
        earlier.insert("database".to_owned(), Value::Object(database));
        earlier.insert("boxes".to_owned(), Value::Object(self.per_box.clone()));
        if let Some(part) = subscriptions {
            earlier.insert("subscriptions".to_owned(), part);
        }
        earlier
    }
}

/// The `failed` component: the FAILED rows of the boxes against `threshold`.
fn failed(whole: &[&BoxCounters], threshold: Option<u64>) -> Component {
    let total: u64 = whole.iter().map(|c| c.failed).sum();
    let by_box: Map<String, Value> = whole
        .iter()
        .filter(|c| c.failed > 0)
        .map(|c| (c.box_kind.table().to_owned(), Value::from(c.failed)))
        .collect();
    let mut details = json!({ "failed": total, "threshold": threshold, "by_box": by_box });
    let over = threshold.is_some_and(|t| total > t);
    if let (true, Some(t)) = (over, threshold) {
        details["reason"] = Value::from(format!(
            "{total} FAILED row(s), more than the FAILED threshold {t}: look at them (GET /messages?status=FAILED), then retry or discard them"
        ));
    }
    Component::new(if over { Status::Down } else { Status::Up }, details)
}

/// The `workers` component: the runtime's tasks, from its liveness probe; without one, UP
/// (the process answers, and runs no workers this router knows of).
pub(crate) fn workers(probe: Option<&Liveness>) -> Component {
    let Some(probe) = probe else {
        return Component::new(
            Status::Up,
            json!({ "probe": false, "tasks": [], "note": "no runtime's liveness probe was given to this router (a process that runs no workers): live while it answers" }),
        );
    };
    let stopped = probe.stopped();
    let alive = probe.is_alive();
    let mut details = json!({
        "probe": true,
        "tasks": probe.tasks(),
        "stopped": stopped,
        "stopping": probe.stopping(),
    });
    if !alive {
        let names: Vec<String> = stopped
            .iter()
            .map(|t| format!("{} ({})", t.task, t.ended))
            .collect();
        details["reason"] = Value::from(if names.is_empty() {
            "the runtime is shutting down".to_owned()
        } else {
            format!("tasks of the runtime no longer run: {}", names.join(", "))
        });
    }
    Component::new(if alive { Status::Up } else { Status::Down }, details)
}

/// The `subscriptions` component, and the earlier `subscriptions` part (`None` while the
/// database is DOWN).
pub(crate) struct Subscriptions {
    pub(crate) component: Component,
    pub(crate) part: Option<Value>,
}

/// Reads the subscriptions' verdict (see [`crate::subscribers::health_part`]).
pub(crate) async fn subscriptions<A: Admin>(
    admin: &A,
    options: &HttpOptions,
    readings: &Readings,
) -> Subscriptions {
    if !readings.database_up() {
        return Subscriptions {
            component: unknown(),
            part: None,
        };
    }
    let part = crate::subscribers::health_part(admin, options).await;
    let status = part.status;
    let value = serde_json::to_value(&part).unwrap_or(Value::Null);
    let mut details = value.as_object().cloned().unwrap_or_default();
    details.remove("status");
    Subscriptions {
        component: Component { status, details },
        part: Some(value),
    }
}
