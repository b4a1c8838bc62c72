//! `GET /health/live`, `GET /health/ready` and `GET /health`, in the shape of Spring Boot's
//! actuator health: `{"status": "UP"|"DOWN", "components": {name: {"status", "details"}}}`,
//! 200 when UP and 503 when DOWN.
//!
//! - **live** (`workers`): the runtime's tasks still run ([`HttpOptions::liveness`]). It
//!   never asks the database, so a backlog or a slow database never restarts a pod.
//! - **ready** (`db`, `boxes`, `failed`): the database answers within the health timeout,
//!   no box has a PENDING row unchanged for longer than the stuck threshold, and, when a
//!   FAILED threshold is set, there are no more FAILED rows than it.
//! - **health**: all of them, plus `subscriptions` (see [`crate::subscribers`]); it also
//!   carries the fields of the earlier `/health` body (`stuck_threshold`, `database`,
//!   `boxes`, `subscriptions` at the top level) for the clients that read them.
//!
//! [`HttpOptions::liveness`]: crate::HttpOptions::liveness

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bandeja_core::admin::Admin;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::health_checks::{self as checks, Readings};
use crate::router::Shared;

/// The status of a component, or of the whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Status {
    /// Working.
    #[serde(rename = "UP")]
    Up,
    /// Not working: the whole is DOWN (503).
    #[serde(rename = "DOWN")]
    Down,
    /// Could not be judged, because what it is read from (the database) is DOWN.
    #[serde(rename = "UNKNOWN")]
    Unknown,
}

/// One component: its status and what it was judged on.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Component {
    pub(crate) status: Status,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub(crate) details: Map<String, Value>,
}

impl Component {
    /// A component with `status` and `details` (a JSON object; anything else is dropped).
    pub(crate) fn new(status: Status, details: Value) -> Self {
        let details = match details {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Component { status, details }
    }

    /// The details' `reason`, if any.
    pub(crate) fn reason(&self) -> Option<&str> {
        self.details.get("reason").and_then(Value::as_str)
    }
}

/// The body of the three endpoints.
#[derive(Debug, Serialize)]
struct Health {
    status: Status,
    components: BTreeMap<&'static str, Component>,
    /// The earlier `/health` fields (only on `/health`).
    #[serde(flatten)]
    earlier: Option<Map<String, Value>>,
}

impl Health {
    /// DOWN when any component is DOWN.
    fn of(components: BTreeMap<&'static str, Component>) -> Self {
        let down = components.values().any(|c| c.status == Status::Down);
        Health {
            status: if down { Status::Down } else { Status::Up },
            components,
            earlier: None,
        }
    }
}

impl IntoResponse for Health {
    fn into_response(self) -> Response {
        let code = match self.status {
            Status::Down => StatusCode::SERVICE_UNAVAILABLE,
            Status::Up | Status::Unknown => StatusCode::OK,
        };
        (code, Json(self)).into_response()
    }
}

/// `GET /health/live`: the `workers` component alone.
pub(crate) async fn live<A: Admin>(state: Shared<A>) -> Response {
    let workers = checks::workers(state.options.liveness.as_ref());
    Health::of(BTreeMap::from([("workers", workers)])).into_response()
}

/// `GET /health/ready`: `db`, `boxes` and `failed`.
pub(crate) async fn ready<A: Admin>(state: Shared<A>) -> Response {
    let readings = Readings::take(&state.admin, &state.options).await;
    Health::of(readings.components()).into_response()
}

/// `GET /health`: every component, and the earlier fields.
pub(crate) async fn health<A: Admin>(state: Shared<A>) -> Response {
    let readings = Readings::take(&state.admin, &state.options).await;
    let subscriptions = checks::subscriptions(&state.admin, &state.options, &readings).await;
    let mut components = readings.components();
    components.insert("workers", checks::workers(state.options.liveness.as_ref()));
    components.insert("subscriptions", subscriptions.component.clone());
    let mut health = Health::of(components);
    health.earlier = Some(readings.earlier(&state.options, subscriptions.part));
    health.into_response()
}
