//! The operator actions — retry one message, retry every FAILED row matching a filter,
//! replay COMPLETED inbox rows, send COMPLETED outbox rows again, purge or archive old
//! COMPLETED rows. Every one needs the admin token.

use axum::extract::Path;
use axum::Json;
use bandeja_core::admin::{Admin, MessageFilter, OutboxReplay, ReplayRefused};
use bandeja_core::StoreError;
use bandeja_core::{BoxKind, MessageStatus};
use serde_json::{json, Value};

use crate::audit::{self, Caller, Details};
use crate::error::ApiError;
use crate::filter::{self, Params, FILTER_KEYS};
use crate::messages::{pairs, RawQuery};
use crate::router::Shared;

/// `POST /messages/{id}/retry[?box=&subscriber=]`: the FAILED rows of one message go back
/// to PENDING. 404 when there is no such message, 409 when none of its rows is FAILED.
pub(crate) async fn retry_one<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    Path(id): Path<String>,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    caller.require_token("retry one")?;
    let id = filter::path_id(&id)?;
    let params = Params::new(pairs(query)?, &[&["box", "subscriber"]])?;
    let filter = MessageFilter {
        id: Some(id),
        status: Some(MessageStatus::Failed),
        ..params.filter()?
    };
    let retried = state.admin.retry(&filter).await?;
    if retried == 0 {
        let rows = state.admin.show(id).await?;
        if rows.is_empty() {
            return Err(ApiError::NotFound(format!("no message with id {id}")));
        }
        let statuses: Vec<String> = rows
            .iter()
            .map(|v| {
                let m = &v.row.message;
                let place = match v.archived_at {
                    Some(_) => format!("{}_archive", m.box_kind),
                    None => m.box_kind.to_string(),
                };
                match &m.subscriber {
                    Some(s) => format!("{place} ({s}): {}", m.status),
                    None => format!("{place}: {}", m.status),
                }
            })
            .collect();
        let archived = rows.iter().any(|v| v.archived_at.is_some());
        return Err(ApiError::Conflict(format!(
            "message {id} has no FAILED row to retry ({}){}",
            statuses.join("; "),
            if archived {
                "; archived rows (discarded or archived) are not retried: replay the outbox \
                 to send the message again"
            } else {
                ""
            }
        )));
    }
    audit::action(
        &caller,
        "retry one",
        Details::new()
            .message(id)
            .filter(&filter)
            .with("retried", retried),
    );
    Ok(Json(json!({ "retried": retried })))
}

/// The token check, then the filter a bulk action's query describes.
fn bulk_filter(
    caller: &Caller,
    action: &'static str,
    query: RawQuery,
) -> Result<MessageFilter, ApiError> {
    caller.require_token(action)?;
    Params::new(pairs(query)?, &[FILTER_KEYS])?.action_filter()
}

/// `POST /retry?<filter>`: every FAILED row matching the filter goes back to PENDING.
pub(crate) async fn retry<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    let filter = bulk_filter(&caller, "retry", query)?;
    if filter.status.is_some_and(|s| s != MessageStatus::Failed) {
        return Err(ApiError::BadRequest(
            "retry resubmits FAILED rows only: leave `status` out or set it to FAILED".to_owned(),
        ));
    }
    let retried = state.admin.retry(&filter).await?;
    audit::action(
        &caller,
        "retry",
        Details::new().filter(&filter).with("retried", retried),
    );
    Ok(Json(json!({ "retried": retried })))
}

/// `POST /replay?<filter>`: COMPLETED inbox rows matching the filter go back to PENDING.
/// At least one filter is required (replaying every handled message is never a default).
pub(crate) async fn replay<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    let filter = bulk_filter(&caller, "replay", query)?;
    let narrowed = MessageFilter {
        status: None,
        ..filter.clone()
    } != MessageFilter::default();
    if !narrowed {
        return Err(ApiError::BadRequest(
            "replay needs at least one filter (box, tenant, type, subscriber, since, until or id)"
                .to_owned(),
        ));
    }
    if filter.status.is_some_and(|s| s != MessageStatus::Completed) {
        return Err(ApiError::BadRequest(
            "replay resubmits COMPLETED rows only: leave `status` out or set it to COMPLETED"
                .to_owned(),
        ));
    }
    if filter.box_kind.is_some_and(|b| !b.is_inbox()) {
        return Err(ApiError::BadRequest(
            "replay applies to inbox_events and inbox_commands only".to_owned(),
        ));
    }
    let replayed = state.admin.replay(&filter).await?;
    audit::action(
        &caller,
        "replay",
        Details::new().filter(&filter).with("replayed", replayed),
    );
    Ok(Json(json!({ "replayed": replayed })))
}

/// A refused outbox replay: 400 for a filter it cannot serve, 409 for a box that keeps
/// nothing to replay (`delete` mode); other store errors as usual.
fn refused(error: StoreError) -> ApiError {
    match ReplayRefused::of(&error) {
        Some(reason) if reason.is_bad_filter() => ApiError::BadRequest(reason.to_string()),
        Some(reason) => ApiError::Conflict(reason.to_string()),
        None => ApiError::Store(error),
    }
}

/// `POST /replay/outbox?<filter>[&all=true][&dry_run=true]`: COMPLETED outbox rows matching
/// the filter (and matching archived ones, moved back) go back to PENDING and are sent
/// again; the subscribers that already have a message absorb it. A filter that narrows
/// nothing (type, since, until, id or tenant) needs `all=true`. `dry_run=true` only
/// counts: `{"matched": n, "dry_run": true}`; otherwise `{"replayed": n}`.
pub(crate) async fn replay_outbox<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    caller.require_token("replay outbox")?;
    let params = Params::new(pairs(query)?, &[FILTER_KEYS, &["all", "dry_run"]])?;
    let replay = OutboxReplay {
        filter: params.filter()?,
        all: params.flag("all")?,
    };
    replay.check().map_err(refused)?;
    if params.flag("dry_run")? {
        let matched = state
            .admin
            .count_outbox_replay(&replay)
            .await
            .map_err(refused)?;
        return Ok(Json(json!({ "matched": matched, "dry_run": true })));
    }
    let replayed = state.admin.replay_outbox(&replay).await.map_err(refused)?;
    audit::action(
        &caller,
        "replay outbox",
        Details::new()
            .filter(&replay.filter)
            .with("all", replay.all)
            .with("replayed", replayed),
    );
    Ok(Json(json!({ "replayed": replayed })))
}

/// Purge or archive.
#[derive(Clone, Copy)]
enum Cleanup {
    Purge,
    Archive,
    /// `POST /purge?archive=true`: the archived rows (archived COMPLETED rows, discarded
    /// FAILED rows) archived before the horizon.
    PurgeArchive,
}

async fn cleanup<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    query: RawQuery,
    action: Cleanup,
) -> Result<Json<Value>, ApiError> {
    let key = match action {
        Cleanup::Purge | Cleanup::PurgeArchive => "purge",
        Cleanup::Archive => "archive",
    };
    caller.require_token(key)?;
    let keys: &[&str] = match action {
        Cleanup::Purge | Cleanup::PurgeArchive => {
            &["box", "older_than", "completed_before", "archive"]
        }
        Cleanup::Archive => &["box", "older_than", "completed_before"],
    };
    let params = Params::new(pairs(query)?, &[keys])?;
    let horizon = params.horizon()?;
    let action = match action {
        Cleanup::Purge if params.flag("archive")? => Cleanup::PurgeArchive,
        other => other,
    };
    let boxes: Vec<BoxKind> = match params.filter()?.box_kind {
        Some(one) => vec![one],
        None => BoxKind::ALL.to_vec(),
    };
    let mut per_box = serde_json::Map::new();
    let mut total = 0u64;
    for box_kind in boxes {
        let n = match action {
            Cleanup::Purge => state.admin.purge(box_kind, horizon).await?,
            Cleanup::Archive => state.admin.archive(box_kind, horizon).await?,
            Cleanup::PurgeArchive => state.admin.purge_archive(box_kind, horizon).await?,
        };
        total += n;
        per_box.insert(box_kind.table().to_owned(), json!(n));
    }
    let (key, horizon_key) = match action {
        Cleanup::Purge => ("purged", "completed_before"),
        Cleanup::Archive => ("archived", "completed_before"),
        Cleanup::PurgeArchive => ("purged", "archived_before"),
    };
    let details = Details::new()
        .with(horizon_key, horizon)
        .with("boxes", serde_json::Value::Object(per_box.clone()))
        .with(key, total);
    match action {
        // Deleted for good.
        Cleanup::Purge => audit::destructive(&caller, "purge", details),
        Cleanup::PurgeArchive => audit::destructive(&caller, "purge archive", details),
        Cleanup::Archive => audit::action(&caller, "archive", details),
    }
    let mut body = json!({ key: total, "boxes": per_box, horizon_key: horizon });
    if matches!(action, Cleanup::PurgeArchive) {
        body["archive"] = json!(true);
    }
    Ok(Json(body))
}

/// `POST /purge?box=&older_than=|completed_before=`: deletes COMPLETED rows completed
/// before the horizon (every box when `box` is left out); with `archive=true`, the rows of
/// the archive tables archived before it instead.
pub(crate) async fn purge<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    cleanup(state, caller, query, Cleanup::Purge).await
}

/// `POST /archive?box=&older_than=|completed_before=`: moves COMPLETED rows completed
/// before the horizon into the archive tables.
pub(crate) async fn archive<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    cleanup(state, caller, query, Cleanup::Archive).await
}
