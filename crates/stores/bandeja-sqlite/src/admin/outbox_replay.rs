//! Outbox replay on SQLite ([`Admin::replay_outbox`](bandeja_core::admin::Admin::replay_outbox)):
//! COMPLETED outbox rows back to PENDING, then archived rows moved back into the box, in
//! batches of [`BATCH`] rows (one short write each).
//!
//! One run takes only rows created up to its start and not resubmitted since (`created_at
//! <= start AND (resubmitted_at IS NULL OR resubmitted_at < start)`): a row it sent again
//! and the relay completed (or archived) again before the run ends is not taken a second
//! time, and emission during a long run does not keep it going.

use std::collections::HashSet;

use bandeja_core::admin::{archive_table, MessageFilter, OutboxReplay};
use bandeja_core::{BoxKind, Store, StoreError, StoreErrorKind};
use sqlx::Row;

use super::sql::{filter_clauses, Statement, Value, BATCH};
use crate::completion::archive_columns;
use crate::queries::NOW;
use crate::{sqlx_error, SqliteStore};

/// The columns of a row sent again, by archive column: PENDING, due now, fresh retry and
/// takeover budgets, no lease, not completed, the resubmission recorded.
fn resent(column: &str) -> String {
    match column {
        "status" => "'PENDING'".to_owned(),
        "retry_count" | "takeover_count" => "0".to_owned(),
        "next_attempt_at" | "last_modified_at" | "resubmitted_at" => NOW.to_owned(),
        "locked_by" | "locked_until" | "completed_at" => "NULL".to_owned(),
        "resubmitted_count" => "resubmitted_count + 1".to_owned(),
        other => other.to_owned(),
    }
}

/// ` AND ...`: the filter (status left out) and the bounds of the run starting at `start`.
fn run_clauses(filter: &MessageFilter, start: &str, values: &mut Vec<Value>) -> String {
    let mut sql = filter_clauses(filter, false, values);
    sql.push_str(" AND created_at <= ? AND (resubmitted_at IS NULL OR resubmitted_at < ?)");
    values.push(Value::Text(start.to_owned()));
    values.push(Value::Text(start.to_owned()));
    sql
}

/// The next batch of COMPLETED rows of the box back to PENDING.
fn resend_completed(box_kind: BoxKind, filter: &MessageFilter, start: &str) -> Statement {
    let mut values = Vec::new();
    let clauses = run_clauses(filter, start, &mut values);
    values.push(Value::Int(BATCH));
    Statement {
        sql: format!(
            "UPDATE {t} SET status = 'PENDING', retry_count = 0, takeover_count = 0, \
               next_attempt_at = {NOW}, locked_by = NULL, locked_until = NULL, \
               completed_at = NULL, last_modified_at = {NOW}, \
               resubmitted_count = resubmitted_count + 1, resubmitted_at = {NOW} \
             WHERE seq IN (SELECT seq FROM {t} WHERE status = 'COMPLETED'{clauses} LIMIT ?)",
            t = box_kind.table()
        ),
        values,
    }
}

/// `FROM <archive> AS a WHERE ...`: archived rows matching, whose id the box does not hold.
fn archived_matching(box_kind: BoxKind, clauses: &str) -> String {
    format!(
        "FROM {archive} AS a WHERE status = 'COMPLETED'{clauses} \
           AND NOT EXISTS (SELECT 1 FROM {t} AS b WHERE b.id = a.id)",
        archive = archive_table(box_kind),
        t = box_kind.table()
    )
}

/// The `rowid` and id of the next batch of archived rows to move back.
fn pick_archived(box_kind: BoxKind, filter: &MessageFilter, start: &str) -> Statement {
    let mut values = Vec::new();
    let clauses = run_clauses(filter, start, &mut values);
    values.push(Value::Int(BATCH));
    Statement {
        sql: format!(
            "SELECT a.rowid AS r, a.id AS id {} ORDER BY a.rowid LIMIT ?",
            archived_matching(box_kind, &clauses)
        ),
        values,
    }
}

/// `?1` = JSON array of archive rowids: those rows back into the box, sent again.
fn restore_archived(box_kind: BoxKind) -> String {
    let columns = archive_columns(false);
    let selected: Vec<String> = columns.split(',').map(|c| resent(c.trim())).collect();
    format!(
        "INSERT INTO {t} ({columns}) SELECT {selected} FROM {archive} \
         WHERE rowid IN (SELECT value FROM json_each(?1)) ORDER BY seq",
        t = box_kind.table(),
        selected = selected.join(", "),
        archive = archive_table(box_kind)
    )
}

/// `?1` = JSON array of archive rowids: deletes them (once restored).
fn drop_archived(box_kind: BoxKind) -> String {
    format!(
        "DELETE FROM {} WHERE rowid IN (SELECT value FROM json_each(?1))",
        archive_table(box_kind)
    )
}

/// How many archived rows of the box a replay would move back.
fn count_archived(box_kind: BoxKind, filter: &MessageFilter) -> Statement {
    let mut values = Vec::new();
    let clauses = filter_clauses(filter, false, &mut values);
    Statement {
        sql: format!(
            "SELECT count(*) AS n {}",
            archived_matching(box_kind, &clauses)
        ),
        values,
    }
}

fn affected(n: u64) -> bool {
    i64::try_from(n).unwrap_or(i64::MAX) >= BATCH
}

impl SqliteStore {
    /// The outboxes `replay` covers; refused when one completes in `delete` mode (and
    /// whatever [`OutboxReplay::check`] refuses).
    pub(super) fn outbox_replay_boxes(
        &self,
        replay: &OutboxReplay,
    ) -> Result<Vec<BoxKind>, StoreError> {
        replay.boxes_in(|b| self.queries(b).mode)
    }

    /// Sends the rows of `replay` again; wakes each outbox that changed.
    pub(super) async fn resend_outbox(&self, replay: &OutboxReplay) -> Result<u64, StoreError> {
        let boxes = self.outbox_replay_boxes(replay)?;
        let start: String = sqlx::query_scalar(&format!("SELECT {NOW}"))
            .fetch_one(self.pool())
            .await
            .map_err(|e| sqlx_error("replay the outbox", e))?;
        let mut total = 0;
        for box_kind in boxes {
            let n = self
                .resend_completed(box_kind, &replay.filter, &start)
                .await?
                + self
                    .restore_archived(box_kind, &replay.filter, &start)
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
        start: &str,
    ) -> Result<u64, StoreError> {
        let statement = resend_completed(box_kind, filter, start);
        let mut total = 0;
        loop {
            let done = statement
                .query()
                .execute(self.pool())
                .await
                .map_err(|e| sqlx_error("replay completed outbox rows", e))?;
            total += done.rows_affected();
            if !affected(done.rows_affected()) {
                return Ok(total);
            }
        }
    }

    /// Moves matching archived rows back into the box, one write transaction per batch.
    async fn restore_archived(
        &self,
        box_kind: BoxKind,
        filter: &MessageFilter,
        start: &str,
    ) -> Result<u64, StoreError> {
        let pick = pick_archived(box_kind, filter, start);
        let (restore, unarchive) = (restore_archived(box_kind), drop_archived(box_kind));
        let mut total = 0;
        loop {
            let mut tx = self
                .pool()
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(|e| sqlx_error("begin a transaction", e))?;
            let picked = pick
                .query()
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| sqlx_error("read archived outbox rows", e))?;
            // One row per id: an id archived twice comes back once (the box's primary key).
            let mut ids = HashSet::new();
            let mut rowids = Vec::with_capacity(picked.len());
            for row in &picked {
                let id: String = row.try_get("id").map_err(|e| sqlx_error("decode", e))?;
                if ids.insert(id) {
                    rowids.push(
                        row.try_get::<i64, _>("r")
                            .map_err(|e| sqlx_error("decode", e))?,
                    );
                }
            }
            if rowids.is_empty() {
                return Ok(total);
            }
            let rowids = serde_json::Value::from(rowids).to_string();
            let restored = sqlx::query(&restore)
                .bind(&rowids)
                .execute(&mut *tx)
                .await
                .map_err(|e| sqlx_error("move archived outbox rows back", e))?;
            let dropped = sqlx::query(&unarchive)
                .bind(&rowids)
                .execute(&mut *tx)
                .await
                .map_err(|e| sqlx_error("delete restored archive rows", e))?;
            if restored.rows_affected() != dropped.rows_affected() {
                // Cannot happen inside one write transaction; roll back rather than lose rows.
                return Err(StoreError::new(
                    StoreErrorKind::Permanent,
                    "move archived outbox rows back",
                    format!(
                        "restored {} rows but would delete {} from the archive: rolled back",
                        restored.rows_affected(),
                        dropped.rows_affected()
                    ),
                ));
            }
            tx.commit().await.map_err(|e| sqlx_error("commit", e))?;
            total += restored.rows_affected();
            if !affected(u64::try_from(picked.len()).unwrap_or(u64::MAX)) {
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
                status: Some(bandeja_core::MessageStatus::Completed),
                ..replay.filter.clone()
            };
            for statement in [
                super::sql::count(box_kind, &completed),
                count_archived(box_kind, &replay.filter),
            ] {
                let n: i64 = statement
                    .query()
                    .fetch_one(self.pool())
                    .await
                    .map_err(|e| sqlx_error("count outbox rows to replay", e))?
                    .try_get("n")
                    .map_err(|e| sqlx_error("count outbox rows to replay", e))?;
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
        let sql = restore_archived(BoxKind::OutboxEvents);
        assert!(
            sql.starts_with("INSERT INTO outbox_events (seq, id,"),
            "{sql}"
        );
        assert!(sql.contains("SELECT seq, id,"), "{sql}");
        assert!(sql.contains("'PENDING'"), "{sql}");
        assert!(sql.contains("resubmitted_count + 1"), "{sql}");
        assert!(!sql.contains("archived_at"), "{sql}");
    }
}
