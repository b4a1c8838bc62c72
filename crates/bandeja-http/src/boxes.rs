//! `GET /boxes`: the counters of the four boxes (per tenant with `?by=tenant`), and the
//! read of them within the health timeout that `/metrics` uses. The health verdicts drawn
//! from them are in [`crate::health`].

use axum::Json;
use bandeja_core::admin::{Admin, BoxCounters};
use bandeja_core::config::format_duration;
use serde::Serialize;

use crate::error::ApiError;
use crate::filter::Params;
use crate::messages::{pairs, RawQuery};
use crate::options::HttpOptions;
use crate::router::Shared;

/// UP, DOWN or UNKNOWN (defined with the health endpoints; the subscriptions' part uses it
/// from here).
pub(crate) use crate::health::Status;

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
