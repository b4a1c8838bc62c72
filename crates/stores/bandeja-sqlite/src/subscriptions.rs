//! The subscriptions in the database (migration 0006): a process registers and refreshes
//! what it runs, and the relay and reception read who gets a row for a message type.

use bandeja_core::store::Route;
use bandeja_core::subscriptions::{kind_name, stored_route, Registration};
use bandeja_core::{MessageKind, StoreError, TenantId};

use crate::{sqlx_error, SqliteStore};

/// A subscription's `first_seen_at` (and, so that it is never later, its `last_seen_at`,
/// and so that they are seen at one moment, its process's times): a millisecond after now. The registration holds
/// the write lock, so no message is created between it and its commit; one created in the
/// same millisecond just before it (times are kept to the millisecond) is then not counted
/// as created after the subscription, which it did not see.
const LATER: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+0.001 seconds')";

/// Upserts the process's subscriptions and its process rows, in one transaction.
pub(crate) async fn register(
    store: &SqliteStore,
    registration: &Registration<'_>,
) -> Result<(), StoreError> {
    let subscriptions: Vec<serde_json::Value> = registration
        .subscriptions
        .iter()
        .map(|s| {
            serde_json::json!([
                s.kind_name(),
                s.message_type,
                s.subscriber,
                s.tenant.as_ref().map_or("", TenantId::as_str),
            ])
        })
        .collect();
    let mut runs: Vec<(&str, &str)> = registration
        .subscriptions
        .iter()
        .map(|s| (s.kind_name(), s.subscriber.as_str()))
        .collect();
    runs.sort_unstable();
    runs.dedup();
    let runs: Vec<serde_json::Value> = runs
        .into_iter()
        .map(|(kind, subscriber)| serde_json::json!([kind, subscriber]))
        .collect();
    let mut tx = store
        .begin_immediate()
        .await
        .map_err(|e| sqlx_error("begin registering the subscriptions", e))?;
    sqlx::query(&format!(
        "INSERT INTO subscriptions \
           (kind, message_type, subscriber, tenant_id, service, first_seen_at, last_seen_at) \
         SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), \
           json_extract(value, '$[2]'), json_extract(value, '$[3]'), ?2, {LATER}, {LATER} \
         FROM json_each(?1) WHERE true \
         ON CONFLICT (kind, message_type, subscriber, tenant_id) DO UPDATE \
           SET last_seen_at = excluded.last_seen_at, service = excluded.service"
    ))
    .bind(serde_json::Value::Array(subscriptions).to_string())
    .bind(registration.service)
    .execute(&mut *tx)
    .await
    .map_err(|e| sqlx_error("register the subscriptions", e))?;
    sqlx::query(&format!(
        "INSERT INTO subscription_processes \
           (process, kind, subscriber, service, host, pid, started_at, last_seen_at) \
         SELECT ?1, json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?2, ?3, ?4, \
           {LATER}, {LATER} \
         FROM json_each(?5) WHERE true \
         ON CONFLICT (process, kind, subscriber) DO UPDATE \
           SET last_seen_at = excluded.last_seen_at"
    ))
    .bind(registration.process)
    .bind(registration.service)
    .bind(registration.host)
    .bind(i64::from(registration.pid))
    .bind(serde_json::Value::Array(runs).to_string())
    .execute(&mut *tx)
    .await
    .map_err(|e| sqlx_error("register the process", e))?;
    tx.commit()
        .await
        .map_err(|e| sqlx_error("commit the registration", e))
}

/// Removes the process rows of a process that stops.
pub(crate) async fn unregister(store: &SqliteStore, process: &str) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM subscription_processes WHERE process = ?1")
        .bind(process)
        .execute(store.workers())
        .await
        .map_err(|e| sqlx_error("unregister the process", e))?;
    Ok(())
}

/// The subscriptions of `kind` (of one service, or all), as routes.
pub(crate) async fn routes(
    store: &SqliteStore,
    kind: MessageKind,
    service: Option<&str>,
) -> Result<Vec<Route>, StoreError> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT message_type, subscriber, tenant_id FROM subscriptions \
         WHERE kind = ?1 AND (?2 IS NULL OR service = ?2) \
         ORDER BY message_type, subscriber, tenant_id",
    )
    .bind(kind_name(kind))
    .bind(service)
    .fetch_all(store.workers())
    .await
    .map_err(|e| sqlx_error("read the subscriptions", e))?;
    Ok(rows
        .into_iter()
        .filter_map(|(message_type, subscriber, tenant)| {
            stored_route(message_type, subscriber, &tenant)
        })
        .collect())
}
