//! Housekeeping of a busy box: fresh planner statistics and vacuum of the dead entries that
//! completed rows leave in the live partial indexes, sooner than autovacuum would.

use bandeja_core::{BoxKind, StoreError};

use crate::{sqlx_error, PgStore};

/// Runs `ANALYZE` or `VACUUM` of the box when enough rows changed since the last one.
pub(crate) async fn maintain(store: &PgStore, box_kind: BoxKind) -> Result<(), StoreError> {
    let table = box_kind.table();
    let stats: Option<(i64, i64, i64)> = sqlx::query_as(
        "SELECT n_live_tup, n_dead_tup, n_mod_since_analyze FROM pg_stat_user_tables \
             WHERE schemaname = $1 AND relname = $2",
    )
    .bind(store.schema())
    .bind(table)
    .fetch_optional(store.pool())
    .await
    .map_err(|e| sqlx_error("read the box statistics", e))?;
    let Some((live, dead, modified)) = stats else {
        return Ok(());
    };
    let qualified = format!("\"{}\".{table}", store.schema());
    // Claims walk the partial indexes: without fresh statistics the planner sorts the
    // whole live set, and dead entries of completed rows cost a visit each until
    // vacuum. Autovacuum wakes once a minute; a busy box needs it sooner.
    if dead > 20_000 {
        sqlx::query(&format!("VACUUM (SKIP_LOCKED) {qualified}"))
            .execute(store.pool())
            .await
            .map_err(|e| sqlx_error("vacuum a box", e))?;
    } else if modified > 1_000 && modified > live / 10 {
        sqlx::query(&format!("ANALYZE (SKIP_LOCKED) {qualified}"))
            .execute(store.pool())
            .await
            .map_err(|e| sqlx_error("analyze a box", e))?;
    }
    Ok(())
}
