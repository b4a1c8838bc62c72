-- What the boxes remember beyond a row: discards, failed attempts, and the indexes the
-- operator's views read (`Admin::discard`, `Admin::attempts`, `Admin::timeline`, archived
-- rows in `Admin::show` and listings). Safe to run again: every statement is
-- `IF NOT EXISTS`.
--
-- * `<box>_archive.discarded_by` / `discard_reason`: who moved a FAILED row into the
--   archive, and why (NULL for archived completions). The archive tables were made with
--   `LIKE <box> INCLUDING DEFAULTS` (0004), so they carry the box's defaults and NOT NULLs
--   but none of its CHECKs: a FAILED row fits as it is. Nullable, no default: adding them
--   rewrites nothing.
-- * `<box>_archive_id`: archived rows by message id (`show`, and whether an attempt's row
--   is still kept). Archive pruning by `archived_at` uses the BRIN index of 0004; the
--   timeline reads completions through the boxes' `completed_at` BRIN index (0004).
-- * `<box>_archive_seq`: archived rows by `seq`, so a page of an archived listing (the
--   dashboard polls it) reads an index range newest first instead of scanning and
--   sorting the whole archive.
--
-- These indexes are built inside the migration's transaction: on a large archive that
-- takes a while and blocks inserts into that archive table meanwhile (completions in
-- `archive` mode, archive, discard). To avoid it, create them beforehand with
-- `CREATE INDEX CONCURRENTLY IF NOT EXISTS` and the same names (docs/operations.md).
-- * `message_attempts`: one row per failed attempt of a box row (`box` its table name,
--   `subscriber` '' for outbox rows), written by the statement that writes the failed
--   outcome; at most 20 kept per row (the same statement deletes the oldest, through
--   `message_attempts_row`). `attempt` is the row's `retry_count + 1` when it failed;
--   `outcome` RETRIED (scheduled again) or FAILED.

ALTER TABLE outbox_events_archive
    ADD COLUMN IF NOT EXISTS discarded_by TEXT, ADD COLUMN IF NOT EXISTS discard_reason TEXT;
ALTER TABLE inbox_events_archive
    ADD COLUMN IF NOT EXISTS discarded_by TEXT, ADD COLUMN IF NOT EXISTS discard_reason TEXT;
ALTER TABLE outbox_commands_archive
    ADD COLUMN IF NOT EXISTS discarded_by TEXT, ADD COLUMN IF NOT EXISTS discard_reason TEXT;
ALTER TABLE inbox_commands_archive
    ADD COLUMN IF NOT EXISTS discarded_by TEXT, ADD COLUMN IF NOT EXISTS discard_reason TEXT;

CREATE INDEX IF NOT EXISTS outbox_events_archive_id ON outbox_events_archive (id);
CREATE INDEX IF NOT EXISTS inbox_events_archive_id ON inbox_events_archive (id);
CREATE INDEX IF NOT EXISTS outbox_commands_archive_id ON outbox_commands_archive (id);
CREATE INDEX IF NOT EXISTS inbox_commands_archive_id ON inbox_commands_archive (id);

CREATE INDEX IF NOT EXISTS outbox_events_archive_seq ON outbox_events_archive (seq);
CREATE INDEX IF NOT EXISTS inbox_events_archive_seq ON inbox_events_archive (seq);
CREATE INDEX IF NOT EXISTS outbox_commands_archive_seq ON outbox_commands_archive (seq);
CREATE INDEX IF NOT EXISTS inbox_commands_archive_seq ON inbox_commands_archive (seq);

CREATE TABLE IF NOT EXISTS message_attempts (
    seq        BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    box        TEXT        NOT NULL,
    id         UUID        NOT NULL,
    subscriber TEXT        NOT NULL DEFAULT '',
    attempt    INT         NOT NULL CHECK (attempt >= 0),
    outcome    TEXT        NOT NULL CHECK (outcome IN ('RETRIED', 'FAILED')),
    error      TEXT        NOT NULL,
    at         TIMESTAMPTZ NOT NULL,
    worker     TEXT
);
CREATE INDEX IF NOT EXISTS message_attempts_row ON message_attempts (id, box, subscriber, seq);
CREATE INDEX IF NOT EXISTS message_attempts_at ON message_attempts (at);
