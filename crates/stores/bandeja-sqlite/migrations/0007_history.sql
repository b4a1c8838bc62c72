-- What the boxes remember beyond a row: discards, failed attempts, and the indexes the
-- operator's views read (`Admin::discard`, `Admin::attempts`, `Admin::timeline`, archived
-- rows in `Admin::show` and listings).
--
-- * `<box>_archive.discarded_by` / `discard_reason`: who moved a FAILED row into the
--   archive, and why (NULL for archived completions).
-- * `<box>_archive_id`, `<box>_archive_archived`, `<box>_archive_seq`: archived rows by
--   message id (`show`, and whether an attempt's row is still kept), by `archived_at`
--   (`purge_archive`, the timeline) and by `seq` (a page of an archived listing reads an
--   index range newest first instead of scanning and sorting the archive).
-- * `<box>_completed`: COMPLETED rows by `completed_at` (partial: rows never completed are
--   not in it), so the per-minute timeline and purge/archive by age read only the range they
--   need.
-- * `message_attempts`: one row per failed attempt of a box row (`box` its table name,
--   `subscriber` '' for outbox rows), written in the transaction that writes the failed
--   outcome; at most 20 kept per row (the store deletes the oldest). `attempt` is the row's
--   `retry_count + 1` when it failed; `outcome` RETRIED (scheduled again) or FAILED.
--
-- SQLite has no `ADD COLUMN IF NOT EXISTS`: like the earlier migrations, the `ALTER`s run
-- once, under sqlx's migration table; everything else is `IF NOT EXISTS`.

ALTER TABLE outbox_events_archive ADD COLUMN discarded_by TEXT;
ALTER TABLE outbox_events_archive ADD COLUMN discard_reason TEXT;
ALTER TABLE inbox_events_archive ADD COLUMN discarded_by TEXT;
ALTER TABLE inbox_events_archive ADD COLUMN discard_reason TEXT;
ALTER TABLE outbox_commands_archive ADD COLUMN discarded_by TEXT;
ALTER TABLE outbox_commands_archive ADD COLUMN discard_reason TEXT;
ALTER TABLE inbox_commands_archive ADD COLUMN discarded_by TEXT;
ALTER TABLE inbox_commands_archive ADD COLUMN discard_reason TEXT;

CREATE INDEX IF NOT EXISTS outbox_events_archive_id ON outbox_events_archive (id);
CREATE INDEX IF NOT EXISTS inbox_events_archive_id ON inbox_events_archive (id);
CREATE INDEX IF NOT EXISTS outbox_commands_archive_id ON outbox_commands_archive (id);
CREATE INDEX IF NOT EXISTS inbox_commands_archive_id ON inbox_commands_archive (id);
CREATE INDEX IF NOT EXISTS outbox_events_archive_archived ON outbox_events_archive (archived_at);
CREATE INDEX IF NOT EXISTS inbox_events_archive_archived ON inbox_events_archive (archived_at);
CREATE INDEX IF NOT EXISTS outbox_commands_archive_archived ON outbox_commands_archive (archived_at);
CREATE INDEX IF NOT EXISTS inbox_commands_archive_archived ON inbox_commands_archive (archived_at);
CREATE INDEX IF NOT EXISTS outbox_events_archive_seq ON outbox_events_archive (seq);
CREATE INDEX IF NOT EXISTS inbox_events_archive_seq ON inbox_events_archive (seq);
CREATE INDEX IF NOT EXISTS outbox_commands_archive_seq ON outbox_commands_archive (seq);
CREATE INDEX IF NOT EXISTS inbox_commands_archive_seq ON inbox_commands_archive (seq);

CREATE INDEX IF NOT EXISTS outbox_events_completed ON outbox_events (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS inbox_events_completed ON inbox_events (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_commands_completed ON outbox_commands (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS inbox_commands_completed ON inbox_commands (completed_at) WHERE completed_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS message_attempts (
    seq        INTEGER PRIMARY KEY,
    box        TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    subscriber TEXT    NOT NULL DEFAULT '',
    attempt    INTEGER NOT NULL,
    outcome    TEXT    NOT NULL CHECK (outcome IN ('RETRIED', 'FAILED')),
    error      TEXT    NOT NULL,
    at         TEXT    NOT NULL,
    worker     TEXT
);
CREATE INDEX IF NOT EXISTS message_attempts_row ON message_attempts (id, box, subscriber, seq);
CREATE INDEX IF NOT EXISTS message_attempts_at ON message_attempts (at);
