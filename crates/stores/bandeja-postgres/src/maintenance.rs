//! Housekeeping of a busy box: fresh planner statistics and vacuum of the dead entries that
//! completed rows leave in the live partial indexes, sooner than autovacuum would — at a
//! cost that does not grow with the COMPLETED history the table holds.
//!
//! - **Statistics** matter when the live set grows past what the planner believes: a
//!   planner that thinks the box has no PENDING rows checks per-key order by walking every
//!   older live row instead of the key's index entries (quadratic in the backlog). So each
//!   round counts the live rows (up to [`PROBE_CAP`], through the live partial index) and
//!   analyzes the box when they outnumber the planner's estimate (the `*_live` index's
//!   `reltuples`) by more than half again plus [`MODIFIED_FLOOR`] — a burst landing on a
//!   quiet box, whatever its history; a steady trickle never triggers it. While the planner
//!   believes the table (nearly) empty the probe runs at every round, before the counters
//!   move, and the analysis it triggers waits for one another process runs. Besides, as
//!   autovacuum would, once a tenth of the table changed. Only the columns claims use and
//!   `id` are analyzed, with a small statistics target (migrations 0003, 0006): a
//!   3,000-row sample, the same cost with 10 thousand or 10 million rows. (These analyses
//!   keep autovacuum's own from ever running, so a column left out has no statistics.)
//! - **Vacuum** removes dead index entries; its cost is a scan of every index of the table,
//!   primary key included, so it grows with history. It runs once the dead rows reach
//!   [`DEAD_FLOOR`] or a twentieth of the table, whichever is larger: its cost per handled
//!   message stays about the same with any history. Claims do not depend on it for speed
//!   (they start at the live floor; dead entries they pass are marked dead by the index
//!   scan itself), it keeps the table and its indexes from bloating.

use bandeja_core::{BoxKind, StoreError};

use crate::{sqlx_error, PgStore};

/// Fewest dead rows worth a vacuum.
const DEAD_FLOOR: i64 = 20_000;

/// Fewest modified rows worth an `ANALYZE`.
const MODIFIED_FLOOR: i64 = 1_000;

/// How long the analysis of a box the planner believes empty waits for another one (see
/// [`analyze_waiting`]).
const ANALYZE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// The live-row probe stops counting here (an underestimate beyond it is already caught).
const PROBE_CAP: i64 = 10_000;

/// The columns claims filter and sort on, and `id`, which outcome writes and outbox marks
/// look rows up by (inboxes also `subscriber`). Without statistics of `id` the planner
/// takes `id = ANY(<a batch>)` for a quarter of the table and scans it all.
const CLAIM_COLUMNS: &str =
    "id, status, seq, tenant_id, partition_key, next_attempt_at, locked_until";

/// What the statistics collector knows of a box.
struct BoxStats {
    /// Rows in the table (COMPLETED history included).
    rows: i64,
    /// Dead row versions not yet vacuumed.
    dead: i64,
    /// Rows inserted, updated or deleted since the last `ANALYZE`.
    modified: i64,
    /// The live (PENDING or PROCESSING) rows as of the last `ANALYZE` or `VACUUM`.
    live_at_last_analyze: i64,
    /// The rows the planner believes the table holds (its `reltuples`; 0 when never analyzed).
    believed_rows: i64,
}

/// `n_live_tup`, `n_dead_tup`, `n_mod_since_analyze`, the live index's and the table's
/// `reltuples`.
type StatsRow = (i64, i64, i64, Option<f32>, Option<f32>);

async fn box_stats(store: &PgStore, box_kind: BoxKind) -> Result<Option<BoxStats>, StoreError> {
    let table = box_kind.table();
    let row: Option<StatsRow> = sqlx::query_as(
        "SELECT s.n_live_tup, s.n_dead_tup, s.n_mod_since_analyze, \
           (SELECT c.reltuples FROM pg_class c WHERE c.oid = i.indexrelid), \
           (SELECT c.reltuples FROM pg_class c WHERE c.oid = s.relid) \
         FROM pg_stat_user_tables s \
         LEFT JOIN pg_stat_user_indexes i ON i.relid = s.relid AND i.indexrelname = $3 \
         WHERE s.schemaname = $1 AND s.relname = $2",
    )
    .bind(store.schema())
    .bind(table)
    .bind(format!("{table}_live"))
    .fetch_optional(store.pool())
    .await
    .map_err(|e| sqlx_error("read the box statistics", e))?;
    Ok(row.map(|(rows, dead, modified, live, believed)| BoxStats {
        rows,
        dead,
        modified,
        live_at_last_analyze: live.map_or(0, whole_rows),
        believed_rows: believed.map_or(0, whole_rows),
    }))
}

/// A `reltuples` estimate as a row count: -1 (never analyzed) counts as 0.
#[allow(clippy::cast_possible_truncation)]
fn whole_rows(estimate: f32) -> i64 {
    // Clamped first, so the cast neither wraps nor saturates.
    estimate.clamp(0.0, 1e15) as i64
}

/// The live rows of the box, counted up to [`PROBE_CAP`].
async fn live_rows(store: &PgStore, box_kind: BoxKind) -> Result<i64, StoreError> {
    let sql = format!(
        "SELECT count(*) FROM (SELECT 1 FROM \"{}\".{} \
         WHERE status IN ('PENDING', 'PROCESSING') LIMIT {PROBE_CAP}) AS live",
        store.schema(),
        box_kind.table()
    );
    sqlx::query_scalar(&sql)
        .fetch_one(store.pool())
        .await
        .map_err(|e| sqlx_error("count the live rows of a box", e))
}

/// Runs `ANALYZE` or `VACUUM` of the box when enough rows changed since the last one.
pub(crate) async fn maintain(store: &PgStore, box_kind: BoxKind) -> Result<(), StoreError> {
    let Some(stats) = box_stats(store, box_kind).await? else {
        return Ok(());
    };
    let qualified = format!("\"{}\".{}", store.schema(), box_kind.table());
    if stats.dead > DEAD_FLOOR.max(stats.rows / 20) {
        // A plain VACUUM also refreshes the partial indexes' row estimates.
        sqlx::query(&format!("VACUUM (SKIP_LOCKED) {qualified}"))
            .execute(store.pool())
            .await
            .map_err(|e| sqlx_error("vacuum a box", e))?;
    }
    let burst = || async {
        let live = live_rows(store, box_kind).await?;
        Ok::<bool, StoreError>(live > stats.live_at_last_analyze * 3 / 2 + MODIFIED_FLOOR)
    };
    let stale = stats.modified > MODIFIED_FLOOR.max(stats.rows / 10);
    // The counters lag the writes, so a burst that landed just before a worker's first claim
    // may not show in them: while the planner believes the box empty the probe runs anyway
    // (a scan of the few live rows there are), and its analysis waits for another process's
    // (`analyze_waiting`). Empty by the table's estimate, not the live index's: a 3,000-row
    // sample of a long history often holds no live row, and a lasting backlog would then be
    // analyzed every round.
    let believed_empty = stats.believed_rows < MODIFIED_FLOOR;
    if (stats.modified > MODIFIED_FLOOR || believed_empty) && (stale || burst().await?) {
        let subscriber = if box_kind.is_inbox() {
            ", subscriber"
        } else {
            ""
        };
        let columns = format!("{qualified} ({CLAIM_COLUMNS}{subscriber})");
        if believed_empty {
            analyze_waiting(store, &columns).await?;
        } else {
            sqlx::query(&format!("ANALYZE (SKIP_LOCKED) {columns}"))
                .execute(store.pool())
                .await
                .map_err(|e| sqlx_error("analyze a box", e))?;
        }
    }
    Ok(())
}

/// `ANALYZE` of `columns` (`table (col, …)`) that waits up to [`ANALYZE_PATIENCE`] for one
/// already running. A box the planner believes empty is analyzed before this process's
/// first claim: with `SKIP_LOCKED`, the second of three processes starting on a burst
/// skipped the first one's analysis and claimed on the old statistics (a relay's claim of
/// 200,000 due rows sorted them all, 2 s). A lock still held after that long (a vacuum of a
/// large box) is an error the caller logs; the next round tries again.
async fn analyze_waiting(store: &PgStore, columns: &str) -> Result<(), StoreError> {
    let mut tx = store
        .pool()
        .begin()
        .await
        .map_err(|e| sqlx_error("begin a box's analysis", e))?;
    sqlx::query(&format!(
        "SET LOCAL lock_timeout = '{}ms'",
        ANALYZE_PATIENCE.as_millis()
    ))
    .execute(&mut *tx)
    .await
    .map_err(|e| sqlx_error("bound the wait of a box's analysis", e))?;
    sqlx::query(&format!("ANALYZE {columns}"))
        .execute(&mut *tx)
        .await
        .map_err(|e| sqlx_error("analyze a box", e))?;
    tx.commit()
        .await
        .map_err(|e| sqlx_error("commit a box's analysis", e))
}
