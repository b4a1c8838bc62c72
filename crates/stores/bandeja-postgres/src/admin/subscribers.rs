//! The subscriptions as operators see them, and their retirement (see
//! [`bandeja_core::admin::subscribers`]): every operator value is a bound parameter, table
//! names come from [`BoxKind`](bandeja_core::BoxKind) and the store's validated schema.

use std::collections::HashMap;
use std::time::Duration;

use bandeja_core::admin::{
    check_retirable, kept_reason, retired_kinds, ProcessView, RetireRefused, RetireReport,
    RetiredSubscription, Settle, SubscriptionView,
};
use bandeja_core::subscriptions::kind_name;
use bandeja_core::{MessageKind, StoreError, StoreErrorKind};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::columns::seconds;
use crate::queries::NOW;
use crate::{sqlx_error, PgStore};

fn bad(what: impl Into<bandeja_core::BoxError>) -> StoreError {
    StoreError::new(StoreErrorKind::Permanent, "decode a subscription", what)
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

fn count(row: &PgRow, column: &str) -> Result<u64, StoreError> {
    let n: i64 = row.try_get(column).map_err(bad)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

const PROCESS_COLUMNS: &str =
    "process, kind, subscriber, service, host, pid, started_at, last_seen_at";

fn process_view(row: &PgRow) -> Result<(MessageKind, String, ProcessView), StoreError> {
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
            started_at: row.try_get("started_at").map_err(bad)?,
            last_seen_at: row.try_get("last_seen_at").map_err(bad)?,
        },
    ))
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

/// [`Admin::subscriptions`](bandeja_core::admin::Admin::subscriptions).
pub(super) async fn subscriptions(
    store: &PgStore,
    live_for: Duration,
) -> Result<Vec<SubscriptionView>, StoreError> {
    let schema = store.schema();
    let inbox = |kind: MessageKind| format!("\"{schema}\".{}", kind.inbox().table());
    let (events, commands) = (inbox(MessageKind::Event), inbox(MessageKind::Command));
    let sql = format!(
        "WITH counted AS ({}) \
         SELECT s.kind, s.message_type, s.subscriber, s.tenant_id, s.service, \
           s.first_seen_at, s.last_seen_at, \
           greatest(extract(epoch FROM {NOW} - s.last_seen_at), 0)::float8 AS unseen, \
           coalesce(sum(c.pending), 0)::int8 AS pending, \
           coalesce(sum(c.failed), 0)::int8 AS failed \
         FROM \"{schema}\".subscriptions s \
         LEFT JOIN counted c ON c.kind = s.kind AND c.subscriber = s.subscriber \
           AND c.message_type = s.message_type \
           AND (s.tenant_id = '' OR c.tenant_id = s.tenant_id) \
         GROUP BY s.kind, s.message_type, s.subscriber, s.tenant_id, s.service, \
           s.first_seen_at, s.last_seen_at \
         ORDER BY CASE s.kind WHEN 'event' THEN 0 ELSE 1 END, s.subscriber, s.message_type, \
           s.tenant_id",
        counted(&events, &commands),
    );
    let rows = sqlx::query(&sql)
        .fetch_all(store.pool())
        .await
        .map_err(|e| sqlx_error("read the subscriptions", e))?;
    let processes = sqlx::query(&format!(
        "SELECT {PROCESS_COLUMNS} FROM \"{schema}\".subscription_processes \
         WHERE last_seen_at > {NOW} - $1::float8 * interval '1 second' \
         ORDER BY kind, subscriber, process"
    ))
    .bind(seconds(live_for))
    .fetch_all(store.pool())
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
        let unseen: f64 = row.try_get("unseen").map_err(bad)?;
        views.push(SubscriptionView {
            kind,
            message_type: text("message_type")?,
            tenant: non_empty(text("tenant_id")?),
            service: non_empty(text("service")?),
            first_seen_at: row.try_get("first_seen_at").map_err(bad)?,
            last_seen_at: row.try_get("last_seen_at").map_err(bad)?,
            unseen_for: Duration::try_from_secs_f64(unseen).unwrap_or_default(),
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
    store: &PgStore,
    conn: &mut PgConnection,
    kinds: &[MessageKind],
    subscriber: &str,
) -> Result<bool, StoreError> {
    let schema = store.schema();
    let mut exists = vec![format!(
        "EXISTS (SELECT 1 FROM \"{schema}\".subscriptions \
           WHERE subscriber = $1 AND kind = ANY($2::text[]))"
    )];
    for kind in kinds {
        let t = kind.inbox().table();
        exists.push(format!(
            "EXISTS (SELECT 1 FROM \"{schema}\".{t} WHERE subscriber = $1 \
               AND status IN ('PENDING', 'PROCESSING')) \
             OR EXISTS (SELECT 1 FROM \"{schema}\".{t} WHERE subscriber = $1 \
               AND status = 'FAILED')"
        ));
    }
    sqlx::query_scalar(&format!("SELECT {}", exists.join(" OR ")))
        .bind(subscriber)
        .bind(kinds.iter().map(|k| kind_name(*k)).collect::<Vec<_>>())
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| sqlx_error("look for the subscriber", e))
}

/// The subscribers a name could have meant: those with a subscription or a live or FAILED
/// inbox row.
async fn known_subscribers(
    store: &PgStore,
    conn: &mut PgConnection,
) -> Result<Vec<String>, StoreError> {
    let schema = store.schema();
    let inboxes: Vec<String> = [MessageKind::Event, MessageKind::Command]
        .iter()
        .map(|k| {
            let t = k.inbox().table();
            format!(
                " UNION SELECT subscriber FROM \"{schema}\".{t} \
                   WHERE status IN ('PENDING', 'PROCESSING') \
                 UNION SELECT subscriber FROM \"{schema}\".{t} WHERE status = 'FAILED'"
            )
        })
        .collect();
    sqlx::query_scalar(&format!(
        "SELECT subscriber FROM \"{schema}\".subscriptions{} ORDER BY 1",
        inboxes.concat()
    ))
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| sqlx_error("list the subscribers", e))
}

/// [`Admin::retire`](bandeja_core::admin::Admin::retire), in one transaction. It first
/// locks `subscription_processes` against writes, so no process registers (or refreshes)
/// between the check for live processes and the commit; a process that registers after
/// the commit registers the subscriber again, as a new subscription.
pub(super) async fn retire(
    store: &PgStore,
    kind: Option<MessageKind>,
    subscriber: &str,
    settle: Settle,
    live_for: Duration,
) -> Result<RetireReport, StoreError> {
    check_retirable(subscriber)?;
    let schema = store.schema();
    let kinds = retired_kinds(kind);
    let kind_names: Vec<&str> = kinds.iter().map(|k| kind_name(*k)).collect();
    let mut tx = store
        .pool()
        .begin()
        .await
        .map_err(|e| sqlx_error("begin retiring the subscription", e))?;
    sqlx::query(&format!(
        "LOCK TABLE \"{schema}\".subscription_processes IN SHARE ROW EXCLUSIVE MODE"
    ))
    .execute(&mut *tx)
    .await
    .map_err(|e| sqlx_error("lock the subscription processes", e))?;
    let live = sqlx::query(&format!(
        "SELECT {PROCESS_COLUMNS} FROM \"{schema}\".subscription_processes \
         WHERE subscriber = $1 AND kind = ANY($2::text[]) \
           AND last_seen_at > {NOW} - $3::float8 * interval '1 second' \
         ORDER BY process"
    ))
    .bind(subscriber)
    .bind(&kind_names)
    .bind(seconds(live_for))
    .fetch_all(&mut *tx)
    .await
    .map_err(|e| sqlx_error("look for live processes", e))?;
    if !live.is_empty() {
        let mut processes: Vec<ProcessView> = Vec::with_capacity(live.len());
        for row in &live {
            let (_, _, process) = process_view(row)?;
            if !processes.iter().any(|p| p.process == process.process) {
                processes.push(process);
            }
        }
        return Err(RetireRefused::Running {
            subscriber: subscriber.to_owned(),
            processes,
        }
        .into_error());
    }
    if !is_known(store, &mut tx, &kinds, subscriber).await? {
        let known = known_subscribers(store, &mut tx).await?;
        return Err(
            RetireRefused::unknown(subscriber, kind, known.iter().map(String::as_str)).into_error(),
        );
    }
    let deleted = sqlx::query(&format!(
        "DELETE FROM \"{schema}\".subscriptions WHERE subscriber = $1 AND kind = ANY($2::text[]) \
         RETURNING kind, message_type, tenant_id"
    ))
    .bind(subscriber)
    .bind(&kind_names)
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
        "DELETE FROM \"{schema}\".subscription_processes \
         WHERE subscriber = $1 AND kind = ANY($2::text[])"
    ))
    .bind(subscriber)
    .bind(&kind_names)
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
    // Each statement reads through a partial index (live or FAILED rows).
    let settled = format!(
        "subscriber = $1 AND status IN ('PENDING', 'PROCESSING') \
           AND (status = 'PENDING' OR locked_until < {NOW})"
    );
    for kind in &kinds {
        let t = format!("\"{schema}\".{}", kind.inbox().table());
        match settle {
            Settle::Discard => {
                let live = sqlx::query(&format!("DELETE FROM {t} WHERE {settled}"))
                    .bind(subscriber)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| sqlx_error("discard the subscriber's rows", e))?;
                report.discarded += live.rows_affected();
                let failed = sqlx::query(&format!(
                    "DELETE FROM {t} WHERE subscriber = $1 AND status = 'FAILED'"
                ))
                .bind(subscriber)
                .execute(&mut *tx)
                .await
                .map_err(|e| sqlx_error("discard the subscriber's FAILED rows", e))?;
                report.discarded_failed += failed.rows_affected();
            }
            Settle::Keep => {
                let kept = sqlx::query(&format!(
                    "UPDATE {t} SET status = 'FAILED', last_error = $2, locked_by = NULL, \
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
            "SELECT count(*) FROM {t} WHERE subscriber = $1 AND status = 'PROCESSING'"
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
