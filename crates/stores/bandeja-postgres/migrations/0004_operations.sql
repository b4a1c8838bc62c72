-- Operations (the `Admin` capability: retry, replay, purge, archive).
--
-- * Operator resubmission is recorded on the row: `resubmitted_count` (how many times an
--   operator sent it back to PENDING with `retry` or `replay`) and `resubmitted_at`
--   (constant defaults: adding them rewrites nothing).
-- * `<box>_archive`: COMPLETED rows moved out of a box by `archive`; the box's columns plus
--   `archived_at`. No keys (an id may be archived more than once: a message received again
--   after its row was archived); a BRIN index on `archived_at` for pruning the archive.
-- * `<box>_failed`: a partial index on FAILED rows only, so counting and listing FAILED rows
--   stays fast however many COMPLETED rows the box holds.
-- * `<box>_completed_brin`: a BRIN index on `completed_at` (a few pages per table, updated
--   cheaply), so `last_processed_at` (a window over recent completions) and purge/archive by
--   age read only the block ranges that can match, without an all-rows btree.

ALTER TABLE outbox_events ADD COLUMN IF NOT EXISTS resubmitted_count INT NOT NULL DEFAULT 0 CHECK (resubmitted_count >= 0);
ALTER TABLE outbox_events ADD COLUMN IF NOT EXISTS resubmitted_at TIMESTAMPTZ;
CREATE INDEX IF NOT EXISTS outbox_events_failed ON outbox_events (seq) WHERE status = 'FAILED';
CREATE INDEX IF NOT EXISTS outbox_events_completed_brin ON outbox_events USING brin (completed_at) WITH (autosummarize = on);
CREATE TABLE IF NOT EXISTS outbox_events_archive (
    LIKE outbox_events INCLUDING DEFAULTS,
    archived_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS outbox_events_archive_archived_brin ON outbox_events_archive USING brin (archived_at);

ALTER TABLE inbox_events ADD COLUMN IF NOT EXISTS resubmitted_count INT NOT NULL DEFAULT 0 CHECK (resubmitted_count >= 0);
ALTER TABLE inbox_events ADD COLUMN IF NOT EXISTS resubmitted_at TIMESTAMPTZ;
CREATE INDEX IF NOT EXISTS inbox_events_failed ON inbox_events (seq) WHERE status = 'FAILED';
CREATE INDEX IF NOT EXISTS inbox_events_completed_brin ON inbox_events USING brin (completed_at) WITH (autosummarize = on);
CREATE TABLE IF NOT EXISTS inbox_events_archive (
    LIKE inbox_events INCLUDING DEFAULTS,
    archived_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS inbox_events_archive_archived_brin ON inbox_events_archive USING brin (archived_at);

ALTER TABLE outbox_commands ADD COLUMN IF NOT EXISTS resubmitted_count INT NOT NULL DEFAULT 0 CHECK (resubmitted_count >= 0);
ALTER TABLE outbox_commands ADD COLUMN IF NOT EXISTS resubmitted_at TIMESTAMPTZ;
CREATE INDEX IF NOT EXISTS outbox_commands_failed ON outbox_commands (seq) WHERE status = 'FAILED';
CREATE INDEX IF NOT EXISTS outbox_commands_completed_brin ON outbox_commands USING brin (completed_at) WITH (autosummarize = on);
CREATE TABLE IF NOT EXISTS outbox_commands_archive (
    LIKE outbox_commands INCLUDING DEFAULTS,
    archived_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS outbox_commands_archive_archived_brin ON outbox_commands_archive USING brin (archived_at);

ALTER TABLE inbox_commands ADD COLUMN IF NOT EXISTS resubmitted_count INT NOT NULL DEFAULT 0 CHECK (resubmitted_count >= 0);
ALTER TABLE inbox_commands ADD COLUMN IF NOT EXISTS resubmitted_at TIMESTAMPTZ;
CREATE INDEX IF NOT EXISTS inbox_commands_failed ON inbox_commands (seq) WHERE status = 'FAILED';
CREATE INDEX IF NOT EXISTS inbox_commands_completed_brin ON inbox_commands USING brin (completed_at) WITH (autosummarize = on);
CREATE TABLE IF NOT EXISTS inbox_commands_archive (
    LIKE inbox_commands INCLUDING DEFAULTS,
    archived_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS inbox_commands_archive_archived_brin ON inbox_commands_archive USING brin (archived_at);
