//! `GET /workers`: who works on the boxes now — the live processes (from the subscriptions'
//! process heartbeats: each running process refreshes its rows, a stopped one's stop
//! counting after `live_for`) with the subscribers they run and the inboxes those feed, and
//! the lease holders of PROCESSING rows per box (outbox workers show here while they hold
//! rows: they register no subscription).

use std::collections::{BTreeMap, BTreeSet};

use axum::http::HeaderMap;
use axum::Json;
use bandeja_core::admin::listing::list_page;
use bandeja_core::admin::{Admin, MessageFilter};
use bandeja_core::MessageStatus;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::auth;
use crate::error::ApiError;
use crate::router::Shared;

/// How many PROCESSING rows are read to group them by holder.
const HELD_ROWS_READ: usize = 1000;

/// One live process.
#[derive(Debug, Serialize)]
pub(crate) struct Process {
    process: String,
    host: String,
    pid: u32,
    service: Option<String>,
    started_at: DateTime<Utc>,
    last_seen_at: DateTime<Utc>,
    subscribers: BTreeSet<String>,
    boxes: BTreeSet<&'static str>,
}

/// The PROCESSING rows one worker holds in one box.
#[derive(Debug, Serialize)]
pub(crate) struct Holder {
    #[serde(rename = "box")]
    box_name: &'static str,
    locked_by: String,
    rows: u64,
    locked_until_max: Option<DateTime<Utc>>,
}

/// The body of `GET /workers`.
#[derive(Debug, Serialize)]
pub(crate) struct Workers {
    processes: Vec<Process>,
    holders: Vec<Holder>,
    /// Whether more PROCESSING rows exist than were read to group the holders.
    holders_truncated: bool,
}

/// `GET /workers`.
pub(crate) async fn list<A: Admin>(
    state: Shared<A>,
    headers: HeaderMap,
) -> Result<Json<Workers>, ApiError> {
    auth::allow_read(&state.options, &headers)?;
    let subscriptions = state.admin.subscriptions(state.options.live_for).await?;
    let mut processes: BTreeMap<String, Process> = BTreeMap::new();
    for subscription in &subscriptions {
        for p in &subscription.processes {
            let entry = processes
                .entry(p.process.clone())
                .or_insert_with(|| Process {
                    process: p.process.clone(),
                    host: p.host.clone(),
                    pid: p.pid,
                    service: p.service.clone(),
                    started_at: p.started_at,
                    last_seen_at: p.last_seen_at,
                    subscribers: BTreeSet::new(),
                    boxes: BTreeSet::new(),
                });
            entry.last_seen_at = entry.last_seen_at.max(p.last_seen_at);
            entry.subscribers.insert(subscription.subscriber.clone());
            entry.boxes.insert(subscription.kind.inbox().table());
        }
    }
    let processing = MessageFilter {
        status: Some(MessageStatus::Processing),
        ..MessageFilter::default()
    };
    let held = list_page(&state.admin, &processing, HELD_ROWS_READ, None).await?;
    let mut holders: BTreeMap<(&'static str, String), Holder> = BTreeMap::new();
    for view in &held.rows {
        let box_name = view.message.box_kind.table();
        let locked_by = view.locked_by.clone().unwrap_or_else(|| "-".to_owned());
        let holder = holders
            .entry((box_name, locked_by.clone()))
            .or_insert_with(|| Holder {
                box_name,
                locked_by,
                rows: 0,
                locked_until_max: None,
            });
        holder.rows += 1;
        holder.locked_until_max = holder.locked_until_max.max(view.locked_until);
    }
    Ok(Json(Workers {
        processes: processes.into_values().collect(),
        holders: holders.into_values().collect(),
        holders_truncated: held.older.is_some(),
    }))
}
