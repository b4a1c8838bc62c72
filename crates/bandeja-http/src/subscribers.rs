//! `GET /subscribers` (the subscriptions with their live processes, pending and FAILED
//! rows and verdict: what `bandeja subscribers --json` prints), `POST
//! /subscribers/{name}/retire?settle=discard|keep[&kind=events|commands]` (needs the admin
//! token), and the `subscriptions` part of `/health`: DOWN while a subscription with
//! pending rows has had no live process for longer than the stuck threshold, naming it;
//! the subscriptions whose rows wait for a process are listed too.

use axum::extract::Path;
use axum::http::HeaderMap;
use axum::Json;
use bandeja_core::admin::{
    attendance, parse_kind, Admin, Attendance, RetireRefused, RetireReport, Settle,
    SubscriberState, SubscriptionListing,
};
use bandeja_core::config::format_duration;
use serde::Serialize;

use crate::audit::{self, Caller, Details};
use crate::auth;
use crate::boxes::Status;
use crate::error::ApiError;
use crate::filter::Params;
use crate::messages::{pairs, RawQuery};
use crate::options::HttpOptions;
use crate::router::Shared;

/// `GET /subscribers`: the token when one is configured (the listing names hosts and
/// process ids).
pub(crate) async fn list<A: Admin>(
    state: Shared<A>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Json<SubscriptionListing>, ApiError> {
    auth::allow_read(&state.options, &headers)?;
    Params::new(pairs(query)?, &[])?;
    let live_for = state.options.live_for;
    let views = state.admin.subscriptions(live_for).await?;
    Ok(Json(SubscriptionListing::new(
        views,
        state.options.stuck_threshold,
        live_for,
    )))
}

/// `POST /subscribers/{name}/retire?settle=discard|keep[&kind=events|commands]`: ends the
/// subscription (see [`Admin::retire`]). 409 while live processes run it, 404 for a name
/// nothing has, 400 for `bandeja.rejected` or a missing `settle`.
pub(crate) async fn retire<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    Path(name): Path<String>,
    query: RawQuery,
) -> Result<Json<RetireReport>, ApiError> {
    caller.require_token("retire")?;
    let params = Params::new(pairs(query)?, &[&["settle", "kind"]])?;
    let settle = match params.get("settle") {
        Some("discard") => Settle::Discard,
        Some("keep") => Settle::Keep,
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "bad `settle` value `{other}`: expected `discard` (delete its pending and FAILED \
                 rows) or `keep` (mark its pending rows FAILED, for inspection and retry)"
            )))
        }
        None => {
            return Err(ApiError::BadRequest(
                "retire needs `settle=discard` (delete its pending and FAILED rows) or \
                 `settle=keep` (mark its pending rows FAILED, for inspection and retry)"
                    .to_owned(),
            ))
        }
    };
    let kind = params
        .get("kind")
        .map(parse_kind)
        .transpose()
        .map_err(|why| ApiError::BadRequest(format!("bad `kind`: {why}")))?;
    let report = state
        .admin
        .retire(kind, &name, settle, state.options.live_for)
        .await
        .map_err(|error| match RetireRefused::of(&error) {
            Some(refused @ RetireRefused::Running { .. }) => {
                ApiError::Conflict(refused.to_string())
            }
            Some(refused @ RetireRefused::Unknown { .. }) => {
                ApiError::NotFound(refused.to_string())
            }
            Some(refused) => ApiError::BadRequest(refused.to_string()),
            None => ApiError::Store(error),
        })?;
    let details = Details::new()
        .with("subscriber", &name)
        .with("settle", settle.as_str())
        .with("subscriptions", report.subscriptions.len())
        .with("discarded", report.discarded + report.discarded_failed)
        .with("kept", report.kept);
    match settle {
        // Its pending and FAILED rows deleted.
        Settle::Discard => audit::destructive(&caller, "retire", details),
        _ => audit::action(&caller, "retire", details),
    }
    Ok(Json(report))
}

/// The `subscriptions` part of `/health`.
#[derive(Debug, Serialize)]
pub(crate) struct Part {
    pub(crate) status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// Subscriptions with pending rows and no live process for longer than the stuck
    /// threshold: the health is DOWN.
    unattended: Vec<SubscriberState>,
    /// Subscriptions whose pending rows wait for a process that runs them (no live process,
    /// but one refreshed them within the stuck threshold).
    waiting: Vec<SubscriberState>,
}

/// The verdict on the subscriptions (read within the health timeout).
pub(crate) async fn health_part<A: Admin>(admin: &A, options: &HttpOptions) -> Part {
    let read = admin.subscriptions(options.live_for);
    let views = match tokio::time::timeout(options.health_timeout, read).await {
        Ok(Ok(views)) => views,
        Ok(Err(error)) => return unreadable(error.to_string()),
        Err(_) => {
            return unreadable(format!(
                "the database did not answer within {}",
                format_duration(options.health_timeout)
            ))
        }
    };
    let (mut unattended, mut waiting) = (Vec::new(), Vec::new());
    for subscriber in attendance(&views, options.stuck_threshold) {
        match subscriber.state {
            Attendance::Unattended => unattended.push(subscriber),
            Attendance::Waiting => waiting.push(subscriber),
            Attendance::Running | Attendance::Idle => {}
        }
    }
    let reasons: Vec<&str> = unattended
        .iter()
        .filter_map(|s| s.reason.as_deref())
        .collect();
    Part {
        status: if unattended.is_empty() {
            Status::Up
        } else {
            Status::Down
        },
        reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
        unattended,
        waiting,
    }
}

fn unreadable(why: String) -> Part {
    Part {
        status: Status::Down,
        reason: Some(format!("cannot read the subscriptions: {why}")),
        unattended: Vec::new(),
        waiting: Vec::new(),
    }
}
