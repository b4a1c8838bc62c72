//! Discarding FAILED rows (a poison message an operator gives up on) and acting on a
//! selection of rows: `POST /messages/{id}/discard`, `POST /discard?<filter>`,
//! `POST /selection/retry`, `POST /selection/discard`. A discard moves the rows into their
//! box's archive with who did it and why, where `GET /messages?archived=true` and
//! `GET /messages/{id}` still find them. Every one needs the admin token and a reason.

use axum::extract::Path;
use axum::Json;
use bandeja_core::admin::{Admin, Discard, MessageFilter};
use bandeja_core::{BoxKind, MessageId, MessageStatus};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::audit::{self, Caller, Details};
use crate::error::ApiError;
use crate::filter::{self, Params, FILTER_KEYS};
use crate::messages::{pairs, RawQuery};
use crate::router::Shared;

/// The longest reason kept.
const MAX_REASON: usize = 500;

/// The most rows one selection may name.
pub(crate) const MAX_SELECTION: usize = 1000;

/// Who acts: the `by` the client gives (an operator's name) with where the request came
/// from, else where it came from. Never the token.
fn actor(by: Option<&str>, caller: &Caller) -> String {
    let from = caller.describe();
    let who = match by.map(str::trim).filter(|b| !b.is_empty()) {
        Some(name) => format!("{name} ({from})"),
        None => from,
    };
    who.chars().take(200).collect()
}

/// The reason, required and bounded.
fn reason(given: Option<&str>) -> Result<String, ApiError> {
    let reason = given
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            ApiError::BadRequest(
                "a discard needs a `reason` (why this message is given up on): it is kept with \
             the archived row"
                    .to_owned(),
            )
        })?;
    if reason.chars().count() > MAX_REASON {
        return Err(ApiError::BadRequest(format!(
            "`reason` is longer than {MAX_REASON} characters"
        )));
    }
    Ok(reason.to_owned())
}

/// `POST /messages/{id}/discard?reason=&box=&subscriber=&by=`: the FAILED rows of one
/// message (narrowed to one row by `box` and `subscriber`) move to the archive. 404 when
/// there is no such message, 409 when none of those rows is FAILED.
pub(crate) async fn discard_one<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    Path(id): Path<String>,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    caller.require_token("discard one")?;
    let id = filter::path_id(&id)?;
    let params = Params::new(pairs(query)?, &[&["box", "subscriber", "reason", "by"]])?;
    let discard = Discard {
        by: actor(params.get("by"), &caller),
        reason: reason(params.get("reason"))?,
    };
    let filter = MessageFilter {
        id: Some(id),
        status: Some(MessageStatus::Failed),
        ..params.filter()?
    };
    let discarded = state.admin.discard(&filter, &discard).await?;
    if discarded == 0 {
        let rows = state.admin.show(id).await?;
        if rows.is_empty() {
            return Err(ApiError::NotFound(format!("no message with id {id}")));
        }
        return Err(ApiError::Conflict(format!(
            "message {id} has no FAILED row to discard{}",
            narrowed(&filter)
        )));
    }
    audit::destructive(
        &caller,
        "discard one",
        Details::new()
            .message(id)
            .filter(&filter)
            .with("discarded", discarded)
            .with("by", &discard.by)
            .with("reason", &discard.reason),
    );
    Ok(Json(json!({ "discarded": discarded })))
}

/// ` (box …, subscriber …)` when the filter names them.
fn narrowed(filter: &MessageFilter) -> String {
    match (&filter.box_kind, &filter.subscriber) {
        (Some(b), Some(s)) => format!(" in {b} for subscriber {s}"),
        (Some(b), None) => format!(" in {b}"),
        (None, Some(s)) => format!(" for subscriber {s}"),
        (None, None) => String::new(),
    }
}

/// `POST /discard?<filter>&reason=&by=`: every FAILED row matching the filter moves to the
/// archive. The filter must narrow something (discarding every FAILED row is never a
/// default) and its status, if set, must be FAILED.
pub(crate) async fn discard<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    caller.require_token("discard")?;
    let params = Params::new(pairs(query)?, &[FILTER_KEYS, &["reason", "by"]])?;
    let filter = params.action_filter()?;
    if filter.status.is_some_and(|s| s != MessageStatus::Failed) {
        return Err(ApiError::BadRequest(
            "discard takes FAILED rows only: leave `status` out or set it to FAILED".to_owned(),
        ));
    }
    let narrowed = MessageFilter {
        status: None,
        ..filter.clone()
    } != MessageFilter::default();
    if !narrowed {
        return Err(ApiError::BadRequest(
            "discard needs at least one filter (box, tenant, type, subscriber, since, until, \
             id or correlation_id): discarding every FAILED row is never a default"
                .to_owned(),
        ));
    }
    let discard = Discard {
        by: actor(params.get("by"), &caller),
        reason: reason(params.get("reason"))?,
    };
    let filter = MessageFilter {
        status: Some(MessageStatus::Failed),
        ..filter
    };
    let discarded = state.admin.discard(&filter, &discard).await?;
    audit::destructive(
        &caller,
        "discard",
        Details::new()
            .filter(&filter)
            .with("discarded", discarded)
            .with("by", &discard.by)
            .with("reason", &discard.reason),
    );
    Ok(Json(json!({ "discarded": discarded })))
}

/// One row of a selection.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Selected {
    id: String,
    #[serde(rename = "box")]
    box_name: String,
    #[serde(default)]
    subscriber: Option<String>,
}

/// The body of `POST /selection/retry` and `POST /selection/discard`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Selection {
    rows: Vec<Selected>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    by: Option<String>,
}

/// The filters of a selection's rows, each naming one row, FAILED.
fn selected_filters(selection: &Selection) -> Result<Vec<MessageFilter>, ApiError> {
    if selection.rows.is_empty() {
        return Err(ApiError::BadRequest(
            "the selection is empty: send `rows` with at least one {id, box, subscriber}"
                .to_owned(),
        ));
    }
    if selection.rows.len() > MAX_SELECTION {
        return Err(ApiError::BadRequest(format!(
            "a selection holds at most {MAX_SELECTION} rows; this one has {}",
            selection.rows.len()
        )));
    }
    selection
        .rows
        .iter()
        .enumerate()
        .map(|(n, row)| {
            let bad = |why: String| ApiError::BadRequest(format!("rows[{n}]: {why}"));
            let id: MessageId = filter::message_id(&row.id).map_err(bad)?;
            let box_kind: BoxKind = row.box_name.parse().map_err(|e| bad(format!("{e}")))?;
            let subscriber = row.subscriber.clone().filter(|s| !s.trim().is_empty());
            if box_kind.is_inbox() != subscriber.is_some() {
                return Err(bad(if box_kind.is_inbox() {
                    format!("an {box_kind} row needs its `subscriber`")
                } else {
                    format!("an {box_kind} row has no subscriber")
                }));
            }
            Ok(MessageFilter {
                id: Some(id),
                box_kind: Some(box_kind),
                subscriber,
                status: Some(MessageStatus::Failed),
                ..MessageFilter::default()
            })
        })
        .collect()
}

/// The message ids a selection names, for the audit line.
fn ids(filters: &[MessageFilter]) -> String {
    let ids: Vec<String> = filters
        .iter()
        .filter_map(|f| f.id.map(|id| id.to_string()))
        .collect();
    ids.join(",")
}

/// The selection in a request body, or a 400 naming what is wrong.
fn body(
    body: Result<Json<Selection>, axum::extract::rejection::JsonRejection>,
) -> Result<Selection, ApiError> {
    body.map(|Json(s)| s)
        .map_err(|e| ApiError::BadRequest(format!("bad selection body: {}", e.body_text())))
}

/// `POST /selection/retry` with `{"rows": [{"id", "box", "subscriber"}]}`: each named row,
/// if FAILED, goes back to PENDING; rows in another status are left alone (counted in
/// `skipped`).
pub(crate) async fn retry_selection<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    selection: Result<Json<Selection>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.require_token("retry selection")?;
    let selection = body(selection)?;
    let filters = selected_filters(&selection)?;
    let mut retried = 0;
    for (done, filter) in filters.iter().enumerate() {
        match state.admin.retry(filter).await {
            Ok(n) => retried += n,
            Err(error) => {
                // What changed before the failure is on record too.
                audit::action(
                    &caller,
                    "retry selection (stopped by an error)",
                    Details::new()
                        .whole("ids", ids(&filters[..done]))
                        .with("retried", retried)
                        .with("error", &error),
                );
                return Err(error.into());
            }
        }
    }
    let skipped = filters.len() as u64 - retried.min(filters.len() as u64);
    audit::action(
        &caller,
        "retry selection",
        Details::new()
            .whole("ids", ids(&filters))
            .with("retried", retried)
            .with("skipped", skipped),
    );
    Ok(Json(json!({ "retried": retried, "skipped": skipped })))
}

/// `POST /selection/discard` with `{"rows": [...], "reason": "...", "by": "..."}`: each
/// named row, if FAILED, moves to the archive with who and why.
pub(crate) async fn discard_selection<A: Admin>(
    state: Shared<A>,
    caller: Caller,
    selection: Result<Json<Selection>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.require_token("discard selection")?;
    let selection = body(selection)?;
    let filters = selected_filters(&selection)?;
    let discard = Discard {
        by: actor(selection.by.as_deref(), &caller),
        reason: reason(selection.reason.as_deref())?,
    };
    let mut discarded = 0;
    for (done, filter) in filters.iter().enumerate() {
        match state.admin.discard(filter, &discard).await {
            Ok(n) => discarded += n,
            Err(error) => {
                audit::destructive(
                    &caller,
                    "discard selection (stopped by an error)",
                    Details::new()
                        .whole("ids", ids(&filters[..done]))
                        .with("discarded", discarded)
                        .with("by", &discard.by)
                        .with("reason", &discard.reason)
                        .with("error", &error),
                );
                return Err(error.into());
            }
        }
    }
    let skipped = filters.len() as u64 - discarded.min(filters.len() as u64);
    audit::destructive(
        &caller,
        "discard selection",
        Details::new()
            .whole("ids", ids(&filters))
            .with("discarded", discarded)
            .with("skipped", skipped)
            .with("by", &discard.by)
            .with("reason", &discard.reason),
    );
    Ok(Json(json!({ "discarded": discarded, "skipped": skipped })))
}
