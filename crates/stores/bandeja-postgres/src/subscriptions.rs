//! The subscriptions in the database (migration 0008): a process registers and refreshes
//! what it runs, and the relay and reception read who gets a row for a message type.

use bandeja_core::store::Route;
use bandeja_core::subscriptions::{kind_name, stored_route, Registration};
use bandeja_core::{MessageKind, StoreError, TenantId};

use crate::{sqlx_error, PgStore};

/// Upserts the process's subscriptions and its process rows, in one statement (sorted, so
/// that processes refreshing the same rows at once never deadlock).
pub(crate) async fn register(
    store: &PgStore,
    registration: &Registration<'_>,
) -> Result<(), StoreError> {
    let mut subscriptions: Vec<(&str, &str, &str, &str)> = registration
        .subscriptions
        .iter()
        .map(|s| {
            (
                s.kind_name(),
                s.message_type.as_str(),
                s.subscriber.as_str(),
                s.tenant.as_ref().map_or("", TenantId::as_str),
            )
        })
        .collect();
    subscriptions.sort_unstable();
    subscriptions.dedup();
    let mut runs: Vec<(&str, &str)> = subscriptions.iter().map(|s| (s.0, s.2)).collect();
    runs.sort_unstable();
    runs.dedup();
    let schema = store.schema();
    let sql = format!(
        "WITH subs AS ( \
           INSERT INTO \"{schema}\".subscriptions AS s \
             (kind, message_type, subscriber, tenant_id, service, first_seen_at, last_seen_at) \
           SELECT u.kind, u.message_type, u.subscriber, u.tenant_id, $5::text, \
             statement_timestamp(), statement_timestamp() \
           FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY \
             AS u(kind, message_type, subscriber, tenant_id, ord) \
           ORDER BY u.ord \
           ON CONFLICT (kind, message_type, subscriber, tenant_id) DO UPDATE \
             SET last_seen_at = EXCLUDED.last_seen_at, service = EXCLUDED.service \
           RETURNING s.kind, s.message_type, s.subscriber, s.tenant_id, (s.xmax = 0) AS inserted), \
         procs AS ( \
           INSERT INTO \"{schema}\".subscription_processes AS p \
             (process, kind, subscriber, service, host, pid, started_at, last_seen_at) \
           SELECT $6::text, u.kind, u.subscriber, $5::text, $7::text, $8::int8, \
             statement_timestamp(), statement_timestamp() \
           FROM UNNEST($9::text[], $10::text[]) WITH ORDINALITY AS u(kind, subscriber, ord) \
           ORDER BY u.ord \
           ON CONFLICT (process, kind, subscriber) DO UPDATE \
             SET last_seen_at = EXCLUDED.last_seen_at \
           RETURNING 1) \
         SELECT kind, message_type, subscriber, tenant_id FROM subs \
         WHERE inserted"
    );
    let inserted: Vec<(String, String, String, String)> = sqlx::query_as(&sql)
        .bind(subscriptions.iter().map(|s| s.0).collect::<Vec<_>>())
        .bind(subscriptions.iter().map(|s| s.1).collect::<Vec<_>>())
        .bind(subscriptions.iter().map(|s| s.2).collect::<Vec<_>>())
        .bind(subscriptions.iter().map(|s| s.3).collect::<Vec<_>>())
        .bind(registration.service)
        .bind(registration.process)
        .bind(registration.host)
        .bind(i64::from(registration.pid))
        .bind(runs.iter().map(|r| r.0).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.1).collect::<Vec<_>>())
        .fetch_all(store.pool())
        .await
        .map_err(|e| sqlx_error("register the process's subscriptions", e))?;
    if inserted.is_empty() {
        return Ok(());
    }
    // A new subscription becomes visible to relays at the commit of the statement above,
    // later than the `statement_timestamp()` it was written with: a message created in
    // between could be relayed without a row for it. `first_seen_at` is set again after
    // that commit, so every message created at or after it gets its row.
    // Its process rows take the same time, so that the subscription and its process are
    // last seen at one moment.
    let sql = format!(
        "WITH visible AS ( \
           UPDATE \"{schema}\".subscriptions AS s SET first_seen_at = statement_timestamp(), \
             last_seen_at = greatest(s.last_seen_at, statement_timestamp()) \
           FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[]) \
             AS u(kind, message_type, subscriber, tenant_id) \
           WHERE s.kind = u.kind AND s.message_type = u.message_type \
             AND s.subscriber = u.subscriber AND s.tenant_id = u.tenant_id \
           RETURNING 1) \
         UPDATE \"{schema}\".subscription_processes \
           SET last_seen_at = greatest(last_seen_at, statement_timestamp()) \
         WHERE process = $5::text"
    );
    sqlx::query(&sql)
        .bind(inserted.iter().map(|s| s.0.as_str()).collect::<Vec<_>>())
        .bind(inserted.iter().map(|s| s.1.as_str()).collect::<Vec<_>>())
        .bind(inserted.iter().map(|s| s.2.as_str()).collect::<Vec<_>>())
        .bind(inserted.iter().map(|s| s.3.as_str()).collect::<Vec<_>>())
        .bind(registration.process)
        .execute(store.pool())
        .await
        .map_err(|e| sqlx_error("record when the subscriptions became visible", e))?;
    Ok(())
}

/// Removes the process rows of a process that stops.
pub(crate) async fn unregister(store: &PgStore, process: &str) -> Result<(), StoreError> {
    let sql = format!(
        "DELETE FROM \"{}\".subscription_processes WHERE process = $1",
        store.schema()
    );
    sqlx::query(&sql)
        .bind(process)
        .execute(store.pool())
        .await
        .map_err(|e| sqlx_error("unregister the process", e))?;
    Ok(())
}

/// The subscriptions of `kind` (of one service, or all), as routes.
pub(crate) async fn routes(
    store: &PgStore,
    kind: MessageKind,
    service: Option<&str>,
) -> Result<Vec<Route>, StoreError> {
    let sql = format!(
        "SELECT message_type, subscriber, tenant_id FROM \"{}\".subscriptions \
         WHERE kind = $1 AND ($2::text IS NULL OR service = $2::text) \
         ORDER BY message_type, subscriber, tenant_id",
        store.schema()
    );
    let rows: Vec<(String, String, String)> = sqlx::query_as(&sql)
        .bind(kind_name(kind))
        .bind(service)
        .fetch_all(store.pool())
        .await
        .map_err(|e| sqlx_error("read the subscriptions", e))?;
    Ok(rows
        .into_iter()
        .filter_map(|(message_type, subscriber, tenant)| {
            stored_route(message_type, subscriber, &tenant)
        })
        .collect())
}
