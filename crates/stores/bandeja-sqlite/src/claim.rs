//! The due rows of a claim or a relay: found in `seq` order inside the caller's write
//! transaction, as `queries::select_due` says (per-key order, tenant, subscribers).

use bandeja_core::store::ClaimRequest;
use bandeja_core::{BoxKind, StoreError, TenantId};
use sqlx::sqlite::SqliteConnection;
use sqlx::Row;

use crate::{sqlx_error, SqliteStore};

/// One due row.
pub(crate) struct Due {
    pub(crate) seq: i64,
    /// The holder of the expired lease it is taken over from (`?` when none was recorded),
    /// `None` for a PENDING row.
    pub(crate) holder: Option<String>,
}

/// The inbox claim's filter: the `[subscriber, type, tenant]` triples as one JSON array.
fn subscribers_json(request: &ClaimRequest<'_>) -> Option<String> {
    request.subscribers.map(|claimable| {
        serde_json::Value::Array(
            claimable
                .iter()
                .map(|k| {
                    serde_json::json!([
                        k.subscriber,
                        k.message_type,
                        k.tenant.as_ref().map(TenantId::as_str),
                    ])
                })
                .collect(),
        )
        .to_string()
    })
}

/// The rows of `box_kind` that `request` may claim now, in `seq` order.
pub(crate) async fn due(
    store: &SqliteStore,
    conn: &mut SqliteConnection,
    box_kind: BoxKind,
    request: &ClaimRequest<'_>,
) -> Result<Vec<Due>, StoreError> {
    let queries = store.queries(box_kind);
    let limit = i64::try_from(request.limit).unwrap_or(i64::MAX);
    let sql = if request.tenant.is_some() {
        &queries.select_due_tenant
    } else {
        &queries.select_due
    };
    let mut select = sqlx::query(sql)
        .bind(i64::from(request.ordered))
        .bind(limit)
        .bind(request.from_seq);
    if let Some(tenant) = request.tenant {
        select = select.bind(tenant.as_str().to_owned());
    }
    if box_kind.is_inbox() {
        select = select.bind(subscribers_json(request));
    }
    let rows = select
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| sqlx_error("select due rows", e))?;
    let read = |e| sqlx_error("read a due row", e);
    rows.iter()
        .map(|row| {
            let seq: i64 = row.try_get(0).map_err(read)?;
            let status: &str = row.try_get(1).map_err(read)?;
            let holder = if status == "PROCESSING" {
                let holder: Option<String> = row.try_get(2).map_err(read)?;
                Some(holder.unwrap_or_else(|| "?".to_owned()))
            } else {
                None
            };
            Ok(Due { seq, holder })
        })
        .collect()
}
