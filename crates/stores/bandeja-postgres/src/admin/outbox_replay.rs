//! Outbox replay on PostgreSQL ([`Admin::replay_outbox`](bandeja_core::admin::Admin::replay_outbox)):
//! COMPLETED outbox rows back to PENDING, then archived rows moved back into the box, in
//! batches of [`BATCH`] rows, one statement each (a batch is chosen by `ctid`, as purge
//! does, so no index over COMPLETED rows is needed). Each statement that changed rows
//! notifies the store's channel, so the outbox workers of every process wake up.
//!
//! One run takes only rows created up to its start and not resubmitted since (`created_at
//! <= start AND (resubmitted_at IS NULL OR resubmitted_at < start)`): a row it sent again
//! and the relay completed (or archived) again before the run ends is not taken a second
//! time, and emission during a long run does not keep it going.

use bandeja_core::admin::{archive_table, MessageFilter, OutboxReplay};
use bandeja_core::{BoxKind, MessageStatus, Store, StoreError, StoreErrorKind};
use chrono::{DateTime, Utc};
use sqlx::Row;

use super::sql::{filter_clauses, table, Binder, Statement, Value, BATCH};
use crate::completion::archive_columns;
use crate::queries::NOW;
use crate::{sqlx_error, PgStore};

/// The value of an archive column in a row sent again: PENDING, due now, fresh retry and
/// takeover budgets, no lease, not completed, the resubmission recorded.
fn resent(column: &str) -> String {
    match column {
        "status" => "'PENDING'".to_owned(),
        "retry_count" | "takeover_count" => "0".to_owned(),
        "next_attempt_at" | "last_modified_at" | "resubmitted_at" => NOW.to_owned(),
        "locked_by" => "NULL::text".to_owned(),
        "locked_until" | "completed_at" => "NULL::timestamptz".to_owned(),
        "resubmitted_count" => "g.resubmitted_count + 1".to_owned(),
        other => format!("g.{other}"),
    }
}

/// ` AND ...`: the filter (status left out) and the bounds of the run starting at `start`.
fn run_clauses(filter: &MessageFilter, start: DateTime<Utc>, binder: &mut Binder) -> String {
    let mut sql = filter_clauses(filter, false, true, binder);
    let p = binder.push(Value::Time(start), "timestamptz");
    sql.push_str(&format!(
        " AND created_at <= {p} AND (resubmitted_at IS NULL OR resubmitted_at < {p})"
    ));
    sql
}

/// `notified AS (...)`, then the final select: `n` (rows written, from `counted`) and
/// whether the channel was notified.
fn notify_tail(binder: &mut Binder, channel: &str, box_kind: BoxKind) -> String {
    let channel = binder.push(Value::Text(channel.to_owned()), "text");
    let payload = binder.push(Value::Text(box_kind.table().to_owned()), "text");
    format!(
        "notified AS (SELECT pg_notify({channel}, {payload}) FROM counted WHERE n > 0) \
         SELECT counted.*, (SELECT count(*) FROM notified) AS notified FROM counted"
    )
}

/// The next batch of COMPLETED rows of the box back to PENDING; returns `n`.
fn resend_completed(
    schema: &str,
    channel: &str,
    box_kind: BoxKind,
    filter: &MessageFilter,
    start: DateTime<Utc>,
) -> Statement {
    let mut binder = Binder::default();
    let clauses = run_clauses(filter, start, &mut binder);
    let limit = binder.push(Value::Int(BATCH), "int8");
    let t = table(schema, box_kind);
    let tail = notify_tail(&mut binder, channel, box_kind);
    Statement {
        sql: format!(
            "WITH changed AS ( \
               UPDATE {t} SET status = 'PENDING', retry_count = 0, takeover_count = 0, \
                 next_attempt_at = {NOW}, locked_by = NULL, locked_until = NULL, \
                 completed_at = NULL, last_modified_at = {NOW}, \
                 resubmitted_count = resubmitted_count + 1, resubmitted_at = {NOW} \
               WHERE ctid = ANY(ARRAY(SELECT ctid FROM {t} WHERE status = 'COMPLETED'{clauses} \
                 LIMIT {limit})) AND status = 'COMPLETED'{clauses} RETURNING 1), \
             counted AS (SELECT count(*) AS n FROM changed), {tail}"
        ),
        values: binder.values,
    }
}

/// `FROM <archive> a WHERE ...`: archived rows matching, whose id the box does not hold.
fn archived_matching(schema: &str, box_kind: BoxKind, clauses: &str) -> String {
    format!(
        "FROM \"{schema}\".{archive} a WHERE status = 'COMPLETED'{clauses} \
           AND NOT EXISTS (SELECT 1 FROM {t} b WHERE b.id = a.id)",
        archive = archive_table(box_kind),
        t = table(schema, box_kind)
    )
}

/// The next batch of archived rows moved back into the box, sent again, in one
/// statement: `picked` (rows chosen), `n` (rows restored), `removed` (archive rows
/// deleted). One row per id comes back (an id archived twice: the latest copy); an archive
/// row is deleted only when its row was written to the box.
fn restore_archived(
    schema: &str,
    channel: &str,
    box_kind: BoxKind,
    filter: &MessageFilter,
    start: DateTime<Utc>,
) -> Statement {
    let mut binder = Binder::default();
    let clauses = run_clauses(filter, start, &mut binder);
    let limit = binder.push(Value::Int(BATCH), "int8");
    let columns = archive_columns(false);
    let selected: Vec<String> = columns.split(", ").map(resent).collect();
    let t = table(schema, box_kind);
    let archive = format!("\"{schema}\".{}", archive_table(box_kind));
    let tail = notify_tail(&mut binder, channel, box_kind);
    Statement {
        sql: format!(
            "WITH picked AS (SELECT a.ctid AS c {matching} LIMIT {limit}), \
             chosen AS (SELECT DISTINCT ON (g.id) g.ctid AS c, g.* FROM {archive} g \
               WHERE g.ctid = ANY(ARRAY(SELECT c FROM picked)) ORDER BY g.id, g.archived_at DESC), \
             restored AS (INSERT INTO {t} ({columns}) OVERRIDING SYSTEM VALUE \
               SELECT {selected} FROM chosen g ORDER BY g.seq \
               ON CONFLICT DO NOTHING RETURNING id, seq), \
             removed AS (DELETE FROM {archive} a USING restored r \
               WHERE a.ctid = ANY(ARRAY(SELECT c FROM chosen)) AND a.id = r.id AND a.seq = r.seq \
               RETURNING 1), \
             counted AS (SELECT (SELECT count(*) FROM picked) AS picked, \
               (SELECT count(*) FROM restored) AS n, (SELECT count(*) FROM removed) AS removed), \
             {tail}",
            matching = archived_matching(schema, box_kind, &clauses),
            selected = selected.join(", "),
        ),
        values: binder.values,
    }
}

/// How many archived rows of the box a replay would move back.
fn count_archived(schema: &str, box_kind: BoxKind, filter: &MessageFilter) -> Statement {
    let mut binder = Binder::default();
    let clauses = filter_clauses(filter, false, true, &mut binder);
    Statement {
        sql: format!(
            "SELECT count(*) AS n {}",
            archived_matching(schema, box_kind, &clauses)
        ),
        values: binder.values,
    }
}

fn decode(e: sqlx::Error) -> StoreError {
    sqlx_error("decode the outcome of an outbox replay", e)
}

fn full(n: i64) -> bool {
    n >= BATCH
}

impl PgStore {
    /// The outboxes `replay` covers; refused when one completes in `delete` mode (and
    /// whatever [`OutboxReplay::check`] refuses).
    fn outbox_replay_boxes(&self, replay: &OutboxReplay) -> Result<Vec<BoxKind>, StoreError> {
        replay.boxes_in(|b| self.queries(b).mode)
    }

    /// Sends the rows of `replay` again; wakes each outbox that changed.
    pub(super) async fn resend_outbox(&self, replay: &OutboxReplay) -> Result<u64, StoreError> {
        let boxes = self.outbox_replay_boxes(replay)?;
        let start: DateTime<Utc> = sqlx::query_scalar(&format!("SELECT {NOW}"))
            .fetch_one(self.pool())
            .await
            .map_err(|e| sqlx_error("replay the outbox", e))?;
        let mut total = 0;
        for box_kind in boxes {
            let n = self
                .resend_completed(box_kind, &replay.filter, start)
                .await?
                + self
                    .restore_archived(box_kind, &replay.filter, start)
                    .await?;
            if n > 0 {
                self.wakers().wake(box_kind);
            }
            total += n;
        }
        Ok(total)
    }

    async fn resend_completed(
        &self,
        box_kind: BoxKind,
        filter: &MessageFilter,
        start: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let statement = resend_completed(self.schema(), self.channel(), box_kind, filter, start);
        let mut total = 0;
        loop {
            let n: i64 = statement
                .query()
                .fetch_one(self.pool())
                .await
                .map_err(|e| sqlx_error("replay completed outbox rows", e))?
                .try_get("n")
                .map_err(decode)?;
            total += u64::try_from(n).unwrap_or(0);
            if !full(n) {
                return Ok(total);
            }
        }
    }

    /// Moves matching archived rows back into the box, one transaction per batch.
    async fn restore_archived(
        &self,
        box_kind: BoxKind,
        filter: &MessageFilter,
        start: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let statement = restore_archived(self.schema(), self.channel(), box_kind, filter, start);
        let mut total = 0;
        loop {
            let mut tx = self
                .pool()
                .begin()
                .await
                .map_err(|e| sqlx_error("begin a transaction", e))?;
            let row = statement
                .query()
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| sqlx_error("move archived outbox rows back", e))?;
            let (picked, n, removed): (i64, i64, i64) = (
                row.try_get("picked").map_err(decode)?,
                row.try_get("n").map_err(decode)?,
                row.try_get("removed").map_err(decode)?,
            );
            if n != removed {
                // Cannot happen (each archive row deleted is the one restored); roll back
                // rather than lose or double a row.
                return Err(StoreError::new(
                    StoreErrorKind::Permanent,
                    "move archived outbox rows back",
                    format!(
                        "restored {n} rows but would delete {removed} from the archive: rolled back"
                    ),
                ));
            }
            tx.commit().await.map_err(|e| sqlx_error("commit", e))?;
            total += u64::try_from(n).unwrap_or(0);
            // Rows picked but not restored (an id the box took meanwhile) no longer match.
            if !full(picked) {
                return Ok(total);
            }
        }
    }

    /// COMPLETED rows plus movable archived rows matching `replay`, box by box.
    pub(super) async fn count_resendable(&self, replay: &OutboxReplay) -> Result<u64, StoreError> {
        let mut total = 0;
        for box_kind in self.outbox_replay_boxes(replay)? {
            let completed = MessageFilter {
                box_kind: Some(box_kind),
                status: Some(MessageStatus::Completed),
                ..replay.filter.clone()
            };
            for statement in [
                super::sql::count(self.schema(), box_kind, &completed),
                count_archived(self.schema(), box_kind, &replay.filter),
            ] {
                let n: i64 = statement
                    .query()
                    .fetch_one(self.pool())
                    .await
                    .map_err(|e| sqlx_error("count outbox rows to replay", e))?
                    .try_get("n")
                    .map_err(decode)?;
                total += u64::try_from(n).unwrap_or(0);
            }
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restored_row_is_pending_and_keeps_its_identity() {
        let at = Utc::now();
        let filter = MessageFilter::default();
        let s = restore_archived("bandeja", "ch", BoxKind::OutboxEvents, &filter, at);
        assert!(
            s.sql
                .contains("OVERRIDING SYSTEM VALUE SELECT g.seq, g.id,"),
            "{}",
            s.sql
        );
        assert!(s.sql.contains("'PENDING'"), "{}", s.sql);
        assert!(s.sql.contains("g.resubmitted_count + 1"), "{}", s.sql);
        assert!(
            s.sql.contains("\"bandeja\".outbox_events_archive"),
            "{}",
            s.sql
        );
        // start, limit, channel, payload: every value bound.
        assert_eq!(s.values.len(), 4);
    }
}
