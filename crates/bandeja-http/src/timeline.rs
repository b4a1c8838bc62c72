//! `GET /timeline?minutes=60`: handled and failed per minute and the lag (commit →
//! handled) over the last minutes, from what the store keeps (completion times of the
//! rows, the attempts history): the dashboard's charts. Every minute from the start to now
//! is listed, empty ones with zeros, for all boxes together and per box.

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use axum::Json;
use bandeja_core::admin::{Admin, MinuteStats};
use bandeja_core::BoxKind;
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use serde::Serialize;

use crate::auth;
use crate::error::ApiError;
use crate::filter::Params;
use crate::messages::{pairs, RawQuery};
use crate::router::Shared;

/// The longest window: one day.
const MAX_MINUTES: i64 = 1440;

/// One minute of the charts.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Minute {
    minute: DateTime<Utc>,
    handled: u64,
    failed: u64,
    lag_max_seconds: f64,
    lag_avg_seconds: f64,
}

impl Minute {
    fn empty(minute: DateTime<Utc>) -> Minute {
        Minute {
            minute,
            handled: 0,
            failed: 0,
            lag_max_seconds: 0.0,
            lag_avg_seconds: 0.0,
        }
    }

    /// Adds one box's minute: counts add, the maximum lag is the largest, the average is
    /// weighted by the rows handled.
    fn absorb(&mut self, stats: &MinuteStats) {
        let (before, more) = (self.handled as f64, stats.handled as f64);
        if before + more > 0.0 {
            self.lag_avg_seconds =
                (self.lag_avg_seconds * before + stats.lag_avg_seconds * more) / (before + more);
        }
        self.handled += stats.handled;
        self.failed += stats.failed;
        self.lag_max_seconds = self.lag_max_seconds.max(stats.lag_max_seconds);
    }
}

/// The body of `GET /timeline`.
#[derive(Debug, Serialize)]
pub(crate) struct Timeline {
    since: DateTime<Utc>,
    minutes: Vec<Minute>,
    boxes: BTreeMap<&'static str, Vec<Minute>>,
}

/// Every minute from `since` to `now` (both truncated to the minute), filled from `stats`.
fn fill(
    since: DateTime<Utc>,
    now: DateTime<Utc>,
    stats: &[MinuteStats],
) -> (Vec<Minute>, BTreeMap<&'static str, Vec<Minute>>) {
    let mut minutes = Vec::new();
    let mut at = since;
    while at <= now {
        minutes.push(Minute::empty(at));
        at += TimeDelta::minutes(1);
    }
    let slot = |minute: DateTime<Utc>| {
        usize::try_from((minute - since).num_minutes())
            .ok()
            .filter(|n| *n < minutes.len())
    };
    let mut boxes: BTreeMap<&'static str, Vec<Minute>> = BoxKind::ALL
        .into_iter()
        .map(|b| (b.table(), minutes.clone()))
        .collect();
    let mut total = minutes.clone();
    for stat in stats {
        let Some(n) = slot(stat.minute) else { continue };
        total[n].absorb(stat);
        if let Some(per_box) = boxes.get_mut(stat.box_kind.table()) {
            per_box[n].absorb(stat);
        }
    }
    (total, boxes)
}

/// `GET /timeline?minutes=` (1 to 1440, default 60).
pub(crate) async fn timeline<A: Admin>(
    state: Shared<A>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Json<Timeline>, ApiError> {
    auth::allow_read(&state.options, &headers)?;
    let params = Params::new(pairs(query)?, &[&["minutes"]])?;
    let minutes = params
        .parse("minutes", |v| match v.parse::<i64>() {
            Ok(n) if (1..=MAX_MINUTES).contains(&n) => Ok(n),
            _ => Err(format!("expected a whole number from 1 to {MAX_MINUTES}")),
        })?
        .unwrap_or(60);
    let now = Utc::now();
    let minute = TimeDelta::minutes(1);
    let now_minute = now.duration_trunc(minute).unwrap_or(now);
    let since = now_minute - TimeDelta::minutes(minutes - 1);
    let stats = state.admin.timeline(since).await?;
    let (minutes, boxes) = fill(since, now_minute, &stats);
    Ok(Json(Timeline {
        since,
        minutes,
        boxes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_are_filled_and_summed_over_boxes() {
        // A whole minute: 1_800_000_000 s is 30_000_000 minutes.
        let since = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).expect("time");
        let now = since + TimeDelta::minutes(2);
        let stat = |box_kind, handled, avg, max| MinuteStats {
            minute: since + TimeDelta::minutes(1),
            box_kind,
            handled,
            failed: 1,
            lag_max_seconds: max,
            lag_avg_seconds: avg,
        };
        let stats = [
            stat(BoxKind::InboxEvents, 3, 1.0, 2.0),
            stat(BoxKind::OutboxEvents, 1, 5.0, 5.0),
        ];
        let (total, boxes) = fill(since, now, &stats);
        assert_eq!(total.len(), 3);
        assert_eq!(total[0], Minute::empty(since));
        assert_eq!((total[1].handled, total[1].failed), (4, 2));
        assert!((total[1].lag_avg_seconds - 2.0).abs() < 1e-9);
        assert!((total[1].lag_max_seconds - 5.0).abs() < 1e-9);
        assert_eq!(boxes["inbox_events"][1].handled, 3);
        assert_eq!(boxes["inbox_commands"][1].handled, 0);
    }
}
