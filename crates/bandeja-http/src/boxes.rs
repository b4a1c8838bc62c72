//! `GET /health` and `GET /boxes`: the box counters, and the health verdict drawn from them
//! (DOWN when PENDING rows are unchanged for longer than the stuck threshold, measured from
//! their `last_modified_at`, a subscription is unattended — see [`crate::subscribers`] — or
//! the database does not answer).

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bandeja_core::admin::{Admin, BoxCounters};
use bandeja_core::config::format_duration;
use bandeja_core::BoxKind;
use serde::Serialize;

use crate::error::ApiError;
use crate::filter::Params;
use crate::messages::{pairs, RawQuery};
use crate::options::HttpOptions;
use crate::router::Shared;

/// UP or DOWN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Status {
    #[serde(rename = "UP")]
    Up,
    #[serde(rename = "DOWN")]
    Down,
}

/// The verdict on one part (the database, a box).
#[derive(Debug, Serialize)]
pub(crate) struct Part {
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stuck: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    oldest_pending_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// The body of `GET /health`.
#[derive(Debug, Serialize)]
pub(crate) struct Health {
    status: Status,
    stuck_threshold: String,
    database: Part,
    boxes: BTreeMap<&'static str, Part>,
    /// DOWN while a subscription is unattended; absent when the database is unreachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    subscriptions: Option<crate::subscribers::Part>,
}

/// The counters of the whole boxes, or why the database could not give them.
pub(crate) async fn counters<A: Admin>(
    admin: &A,
    options: &HttpOptions,
    by_tenant: bool,
) -> Result<Vec<BoxCounters>, String> {
    let read = async {
        admin.ping().await.map_err(|e| e.to_string())?;
        admin
            .counters(options.stuck_threshold, by_tenant)
            .await
            .map_err(|e| e.to_string())
    };
    match tokio::time::timeout(options.health_timeout, read).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "the database did not answer within {}",
            format_duration(options.health_timeout)
        )),
    }
}

fn box_part(counters: &BoxCounters, threshold: &str) -> Part {
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
    Part {
        status: if reason.is_some() {
            Status::Down
        } else {
            Status::Up
        },
        reason,
        pending: Some(counters.pending),
        stuck: Some(counters.stuck),
        failed: Some(counters.failed),
        oldest_pending_at: counters.oldest_pending_at,
    }
}

/// The health verdict.
pub(crate) async fn check<A: Admin>(admin: &A, options: &HttpOptions) -> Health {
    let threshold = format_duration(options.stuck_threshold);
    let (database, boxes) = match counters(admin, options, false).await {
        Ok(all) => {
            let boxes = BoxKind::ALL
                .into_iter()
                .filter_map(|b| all.iter().find(|c| c.box_kind == b && c.tenant.is_none()))
                .map(|c| (c.box_kind.table(), box_part(c, &threshold)))
                .collect();
            (up(), boxes)
        }
        Err(reason) => (
            Part {
                reason: Some(format!("database unreachable: {reason}")),
                ..down()
            },
            BTreeMap::new(),
        ),
    };
    let subscriptions = match database.status {
        Status::Up => Some(crate::subscribers::health_part(admin, options).await),
        Status::Down => None,
    };
    let healthy = database.status == Status::Up
        && boxes.values().all(|p| p.status == Status::Up)
        && subscriptions
            .as_ref()
            .is_none_or(|p| p.status == Status::Up);
    Health {
        status: if healthy { Status::Up } else { Status::Down },
        stuck_threshold: threshold,
        database,
        boxes,
        subscriptions,
    }
}

fn up() -> Part {
    Part {
        status: Status::Up,
        reason: None,
        pending: None,
        stuck: None,
        failed: None,
        oldest_pending_at: None,
    }
}

fn down() -> Part {
    Part {
        status: Status::Down,
        ..up()
    }
}

/// `GET /health`: 200 when UP, 503 when DOWN; the body says why per box.
pub(crate) async fn health<A: Admin>(state: Shared<A>) -> Response {
    let health = check(&state.admin, &state.options).await;
    let code = match health.status {
        Status::Up => StatusCode::OK,
        Status::Down => StatusCode::SERVICE_UNAVAILABLE,
    };
    (code, Json(health)).into_response()
}

/// The body of `GET /boxes`.
#[derive(Debug, Serialize)]
struct Boxes {
    by: &'static str,
    stuck_threshold: String,
    boxes: Vec<BoxCounters>,
}

/// `GET /boxes` (`?by=tenant`: one entry per box and tenant).
pub(crate) async fn boxes<A: Admin>(
    state: Shared<A>,
    query: RawQuery,
) -> Result<Json<impl Serialize>, ApiError> {
    let params = Params::new(pairs(query)?, &[&["by"]])?;
    let by_tenant = match params.get("by") {
        None | Some("box") => false,
        Some("tenant") => true,
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "bad `by` value `{other}`: expected `box` or `tenant`"
            )))
        }
    };
    let boxes = state
        .admin
        .counters(state.options.stuck_threshold, by_tenant)
        .await?;
    Ok(Json(Boxes {
        by: if by_tenant { "tenant" } else { "box" },
        stuck_threshold: format_duration(state.options.stuck_threshold),
        boxes,
    }))
}
