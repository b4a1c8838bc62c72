//! The subscriptions as operators see them, and their retirement (see
//! [`bandeja_core::admin::subscribers`]): every operator value is a bound parameter, table
//! names come from [`BoxKind`], kinds from [`MessageKind`].

use std::collections::HashMap;
use std::time::Duration;

use bandeja_core::admin::{
    check_retirable, kept_reason, retired_kinds, ProcessView, RetireRefused, RetireReport,
    RetiredSubscription, Settle, SubscriptionView,
};
use bandeja_core::subscriptions::kind_name;
use bandeja_core::{MessageKind, StoreError};
use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::sql::time_text;
use crate::decode::{bad, parse_time};
use crate::queries::NOW;
use crate::{sqlx_error, SqliteStore};

/// `'event', 'command'`: the kinds as SQL constants (closed enum, never user text).
fn kinds_sql(kinds: &[MessageKind]) -> String {
    kinds
        .iter()
        .map(|k| format!("'{}'", kind_name(*k)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn kind_of(text: &str) -> Result<MessageKind, StoreError> {
    match text {
        "event" => Ok(MessageKind::Event),
        "command" => Ok(MessageKind::Command),
        other => Err(bad(format!("unknown subscription kind `{other}`"))),
    }
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn count(row: &SqliteRow, column: &str) -> Result<u64, StoreError> {
    let n: i64 = row.try_get(column).map_err(bad)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The text of `now - ago` as the tables store times (the earliest time when too far).
fn before_now(now: DateTime<Utc>, ago: Duration) -> String {
    let cutoff = chrono::Duration::from_std(ago)
        .ok()
        .and_then(|ago| now.checked_sub_signed(ago))
        .unwrap_or(DateTime::<Utc>::MIN_UTC);
    time_text(cutoff.max(DateTime::<Utc>::UNIX_EPOCH))
}

/// The live (PENDING, PROCESSING) and FAILED rows of both inboxes, counted in one pass
/// over each partial index (live, FAILED) and grouped by kind, subscriber, type and tenant:
/// the subscriptions take their counts from it, so a listing (and every `/health`) reads
/// each row once however many subscriptions there are.
fn counted(events: &str, commands: &str) -> String {
    let mut parts = Vec::new();
    for (kind, inbox) in [("event", events), ("command", commands)] {
        for (statuses, pending, failed) in [
            ("status IN ('PENDING', 'PROCESSING')", "count(*)", "0"),
            ("status = 'FAILED'", "0", "count(*)"),
        ] {
            parts.push(format!(
                "SELECT '{kind}' AS kind, subscriber, message_type, tenant_id, \
                   {pending} AS pending, {failed} AS failed FROM {inbox} WHERE {statuses} \
                 GROUP BY subscriber, message_type, tenant_id"
            ));
        }
    }
    parts.join(" UNION ALL ")
}

fn process_view(row: &SqliteRow) -> Result<(MessageKind, String, ProcessView), StoreError> {
    let kind: String = row.try_get("kind").map_err(bad)?;
    let pid: i64 = row.try_get("pid").map_err(bad)?;
    let text = |column: &str| row.try_get::<String, _>(column).map_err(bad);
    Ok((
        kind_of(&kind)?,
        text("subscriber")?,
        ProcessView {
            process: text("process")?,
            host: text("host")?,
            pid: u32::try_from(pid).map_err(|_| bad(format!("pid out of range: {pid}")))?,
            service: non_empty(text("service")?),
            started_at: parse_time(&text("started_at")?)?,
            last_seen_at: parse_time(&text("last_seen_at")?)?,
        },
    ))
}

const PROCESS_COLUMNS: &str =
    "process, kind, subscriber, service, host, pid, started_at, last_seen_at";

/// [`Admin::subscriptions`](bandeja_core::admin::Admin::subscriptions).
pub(super) async fn subscriptions(
    store: &SqliteStore,
    live_for: Duration,
) -> Result<Vec<SubscriptionView>, StoreError> {
    let now = Utc::now();
    let (events, commands) = (
        MessageKind::Event.inbox().table(),
        MessageKind::Command.inbox().table(),
    );
    let sql = format!(
        "WITH counted AS ({}) \
         SELECT s.kind, s.message_type, s.subscriber, s.tenant_id, s.service, \
           s.first_seen_at, s.last_seen_at, \
           coalesce(sum(c.pending), 0) AS pending, coalesce(sum(c.failed), 0) AS failed \
         FROM subscriptions s \
         LEFT JOIN counted c ON c.kind = s.kind AND c.subscriber = s.subscriber \
           AND c.message_type = s.message_type \
           AND (s.tenant_id = '' OR c.tenant_id = s.tenant_id) \
         GROUP BY s.kind, s.message_type, s.subscriber, s.tenant_id, s.service, \
           s.first_seen_at, s.last_seen_at \
         ORDER BY CASE s.kind WHEN 'event' THEN 0 ELSE 1 END, s.subscriber, s.message_type, \
           s.tenant_id",
        counted(events, commands),
    );
    let mut conn = store
        .pool()
        .acquire()
        .await
        .map_err(|e| sqlx_error("read the subscriptions", e))?;
    let rows = sqlx::query(&sql)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| sqlx_error("read the subscriptions", e))?;
    let processes = sqlx::query(&format!(
        "SELECT {PROCESS_COLUMNS} FROM subscription_processes WHERE last_seen_at > ?1 \
         ORDER BY kind, subscriber, process"
    ))
    .bind(before_now(now, live_for))
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| sqlx_error("read the subscription processes", e))?;
    let mut running: HashMap<(MessageKind, String), Vec<ProcessView>> = HashMap::new();
    for row in &processes {
        let (kind, subscriber, process) = process_view(row)?;
        running.entry((kind, subscriber)).or_default().push(process);
    }
    let mut views = Vec::with_capacity(rows.len());
    for row in &rows {
        let text = |column: &str| row.try_get::<String, _>(column).map_err(bad);
        let kind = kind_of(&text("kind")?)?;
        let subscriber = text("subscriber")?;
        let last_seen_at = parse_time(&text("last_seen_at")?)?;
        views.push(SubscriptionView {
            kind,
            message_type: text("message_type")?,
            tenant: non_empty(text("tenant_id")?),
            service: non_empty(text("service")?),
            first_seen_at: parse_time(&text("first_seen_at")?)?,
            last_seen_at,
            unseen_for: (now - last_seen_at).to_std().unwrap_or_default(),
            processes: running
                .get(&(kind, subscriber.clone()))
                .cloned()
                .unwrap_or_default(),
            pending: count(row, "pending")?,
            failed: count(row, "failed")?,
            subscriber,
        });
    }
    Ok(views)
}

/// Whether `subscriber` has a subscription or a live or FAILED inbox row of `kinds`.
async fn is_known(
    conn: &mut SqliteConnection,
    kinds: &[MessageKind],
    subscriber: &str,
) -> Result<bool, StoreError> {
    let mut exists = vec![format!(
        "EXISTS (SELECT 1 FROM subscriptions WHERE subscriber = ?1 AND kind IN ({}))",
        kinds_sql(kinds)
    )];
    for kind in kinds {
        exists.push(format!(
            "EXISTS (SELECT 1 FROM {} WHERE subscriber = ?1 \
               AND status IN ('PENDING', 'PROCESSING', 'FAILED'))",
            kind.inbox().table()
        ));
    }
    let known: i64 = sqlx::query_scalar(&format!("SELECT {}", exists.join(" OR ")))
        .bind(subscriber)
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| sqlx_error("look for the subscriber", e))?;
    Ok(known != 0)
}

/// The subscribers a name could have meant: those with a subscription or a live or FAILED
/// inbox row.
async fn known_subscribers(conn: &mut SqliteConnection) -> Result<Vec<String>, StoreError> {
    let inboxes: Vec<String> = [MessageKind::Event, MessageKind::Command]
        .iter()
        .map(|k| {
            format!(
                " UNION SELECT subscriber FROM {} WHERE status IN ('PENDING', 'PROCESSING', 'FAILED')",
                k.inbox().table()
            )
        })
        .collect();
    sqlx::query_scalar(&format!(
        "SELECT subscriber FROM subscriptions{} ORDER BY 1",
        inboxes.concat()
    ))
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| sqlx_error("list the subscribers", e))
}

/// [`Admin::retire`](bandeja_core::admin::Admin::retire), in one `BEGIN IMMEDIATE`
/// transaction (no registration, relay or claim writes in between).
pub(super) async fn retire(
    store: &SqliteStore,
    kind: Option<MessageKind>,
    subscriber: &str,
    settle: Settle,
    live_for: Duration,
) -> Result<RetireReport, StoreError> {
    check_retirable(subscriber)?;
    let kinds = retired_kinds(kind);
    let in_kinds = kinds_sql(&kinds);
    let mut tx = store
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(|e| sqlx_error("begin retiring the subscription", e))?;
    let live = sqlx::query(&format!(
        "SELECT {PROCESS_COLUMNS} FROM subscription_processes \
         WHERE subscriber = ?1 AND kind IN ({in_kinds}) AND last_seen_at > ?2 ORDER BY process"
    ))
    .bind(subscriber)
    .bind(before_now(Utc::now(), live_for))
    .fetch_all(&mut *tx)
    .await
    .map_err(|e| sqlx_error("look for live processes", e))?;
    if !live.is_empty() {
        let mut processes = Vec::with_capacity(live.len());
        for row in &live {
            let (_, _, process) = process_view(row)?;
            if !processes
                .iter()
                .any(|p: &ProcessView| p.process == process.process)
            {
                processes.push(process);
            }
        }
        return Err(RetireRefused::Running {
            subscriber: subscriber.to_owned(),
            processes,
        }
        .into_error());
    }
    if !is_known(&mut tx, &kinds, subscriber).await? {
        let known = known_subscribers(&mut tx).await?;
        return Err(
            RetireRefused::unknown(subscriber, kind, known.iter().map(String::as_str)).into_error(),
        );
    }
    let deleted = sqlx::query(&format!(
        "DELETE FROM subscriptions WHERE subscriber = ?1 AND kind IN ({in_kinds}) \
         RETURNING kind, message_type, tenant_id"
    ))
    .bind(subscriber)
    .fetch_all(&mut *tx)
    .await
    .map_err(|e| sqlx_error("delete the subscriptions", e))?;
    let mut subscriptions = Vec::with_capacity(deleted.len());
    for row in &deleted {
        let text = |column: &str| row.try_get::<String, _>(column).map_err(bad);
        subscriptions.push(RetiredSubscription {
            kind: kind_of(&text("kind")?)?,
            message_type: text("message_type")?,
            tenant: non_empty(text("tenant_id")?),
        });
    }
    subscriptions.sort_by(|a, b| {
        (kind_name(a.kind), &a.message_type, &a.tenant).cmp(&(
            kind_name(b.kind),
            &b.message_type,
            &b.tenant,
        ))
    });
    sqlx::query(&format!(
        "DELETE FROM subscription_processes WHERE subscriber = ?1 AND kind IN ({in_kinds})"
    ))
    .bind(subscriber)
    .execute(&mut *tx)
    .await
    .map_err(|e| sqlx_error("delete the stopped processes' rows", e))?;
    let mut report = RetireReport {
        subscriber: subscriber.to_owned(),
        settle,
        subscriptions,
        discarded: 0,
        discarded_failed: 0,
        kept: 0,
        in_flight: 0,
    };
    // Written so that each statement reads through a partial index (live or FAILED rows).
    let settled = format!(
        "subscriber = ?1 AND status IN ('PENDING', 'PROCESSING') \
           AND (status = 'PENDING' OR locked_until < {NOW})"
    );
    for kind in &kinds {
        let t = kind.inbox().table();
        match settle {
            Settle::Discard => {
                let live = sqlx::query(&format!("DELETE FROM {t} WHERE {settled}"))
                    .bind(subscriber)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| sqlx_error("discard the subscriber's rows", e))?;
                report.discarded += live.rows_affected();
                let failed = sqlx::query(&format!(
                    "DELETE FROM {t} WHERE subscriber = ?1 AND status = 'FAILED'"
                ))
                .bind(subscriber)
                .execute(&mut *tx)
                .await
                .map_err(|e| sqlx_error("discard the subscriber's FAILED rows", e))?;
                report.discarded_failed += failed.rows_affected();
            }
            Settle::Keep => {
                let kept = sqlx::query(&format!(
                    "UPDATE {t} SET status = 'FAILED', last_error = ?2, locked_by = NULL, \
                       locked_until = NULL, last_modified_at = {NOW} WHERE {settled}"
                ))
                .bind(subscriber)
                .bind(kept_reason(subscriber))
                .execute(&mut *tx)
                .await
                .map_err(|e| sqlx_error("mark the subscriber's rows FAILED", e))?;
                report.kept += kept.rows_affected();
            }
        }
        let in_flight: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM {t} WHERE subscriber = ?1 \
               AND status IN ('PENDING', 'PROCESSING') AND status = 'PROCESSING'"
        ))
        .bind(subscriber)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| sqlx_error("count the rows in flight", e))?;
        report.in_flight += u64::try_from(in_flight).unwrap_or(0);
    }
    tx.commit()
        .await
        .map_err(|e| sqlx_error("commit the retirement", e))?;
    tracing::info!(
        subscriber,
        settle = settle.as_str(),
        subscriptions = report.subscriptions.len(),
        discarded = report.discarded,
        discarded_failed = report.discarded_failed,
        kept = report.kept,
        in_flight = report.in_flight,
        "subscription retired by an operator"
    );
    Ok(report)
}
