//! Takeover after a kill, measured from the database: right after a worker is SIGKILLed,
//! the rows it held (PROCESSING under a lease of its, `<worker id>#...`, in either event box) are counted with
//! what was left of their lease, then watched until none is held by it any more — another
//! worker claimed them once the lease expired.

use std::time::{Duration, Instant};

use sqlx::PgPool;

/// How often the held rows are counted while waiting.
const WATCH_EVERY: Duration = Duration::from_millis(25);

/// One kill and what followed it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Takeover {
    /// The killed worker's id.
    pub worker: String,
    /// When it was killed, in milliseconds since emission started.
    pub at_ms: u64,
    /// Rows it held (PROCESSING under its lease) when it died.
    pub rows_held: i64,
    /// How much of its lease was left then, in milliseconds (the longest of its rows).
    pub lease_left_ms: i64,
    /// How long until no row was held by it any more, in milliseconds; `None` if that did
    /// not happen within the watch's timeout.
    pub takeover_ms: Option<u64>,
}

fn held_sql(schema: &str) -> String {
    format!(
        "SELECT count(*), \
           COALESCE(EXTRACT(EPOCH FROM max(locked_until) - clock_timestamp()) * 1000, 0)::float8 \
         FROM (SELECT locked_until FROM \"{schema}\".outbox_events \
                 WHERE status = 'PROCESSING' AND starts_with(locked_by, $1 || '#') \
               UNION ALL \
               SELECT locked_until FROM \"{schema}\".inbox_events \
                 WHERE status = 'PROCESSING' AND starts_with(locked_by, $1 || '#')) held"
    )
}

/// Counts what `worker` holds, retrying through a database outage until `deadline`.
async fn held(pool: &PgPool, sql: &str, worker: &str, deadline: Instant) -> Option<(i64, f64)> {
    loop {
        match sqlx::query_as::<_, (i64, f64)>(sql)
            .bind(worker)
            .fetch_one(pool)
            .await
        {
            Ok(row) => return Some(row),
            Err(_) if Instant::now() < deadline => tokio::time::sleep(WATCH_EVERY).await,
            Err(_) => return None,
        }
    }
}

/// Watches the rows `worker` held when it was killed at `killed_at` (`at_ms` into the
/// run), for at most `timeout`.
pub(crate) async fn watch(
    pool: PgPool,
    schema: String,
    worker: String,
    killed_at: Instant,
    at_ms: u64,
    timeout: Duration,
) -> Takeover {
    let sql = held_sql(&schema);
    let deadline = killed_at + timeout;
    let (rows_held, lease_left) = held(&pool, &sql, &worker, deadline)
        .await
        .unwrap_or((-1, 0.0));
    let mut takeover_ms = None;
    if rows_held == 0 {
        takeover_ms = Some(0);
    } else {
        while Instant::now() < deadline {
            match held(&pool, &sql, &worker, deadline).await {
                Some((0, _)) => {
                    takeover_ms = Some(super::ms(killed_at.elapsed()));
                    break;
                }
                Some(_) => tokio::time::sleep(WATCH_EVERY).await,
                None => break,
            }
        }
    }
    Takeover {
        worker,
        at_ms,
        rows_held,
        // Rounded to whole milliseconds; a lease never lasts anywhere near i64::MAX ms.
        #[allow(clippy::cast_possible_truncation)]
        lease_left_ms: lease_left.round() as i64,
        takeover_ms,
    }
}
