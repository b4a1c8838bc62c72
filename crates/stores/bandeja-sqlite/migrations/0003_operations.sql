-- Operations (the `Admin` capability: retry, replay, purge, archive).
--
-- * Operator resubmission is recorded on the row: `resubmitted_count` (how many times an
--   operator sent it back to PENDING with `retry` or `replay`) and `resubmitted_at`.
-- * `<box>_archive`: COMPLETED rows moved out of a box by `archive`; the box's columns plus
--   `archived_at`. No keys and no indexes: an id may be archived more than once (a message
--   received again after its row was archived), and nothing on the hot path reads them.
-- * `<box>_failed`: a partial index on FAILED rows only, so counting and listing FAILED rows
--   stays fast however many COMPLETED rows the box holds. No index here covers all rows;
--   `max(completed_at)` and purge/archive by age scan the box (acceptable on SQLite).

ALTER TABLE outbox_events ADD COLUMN resubmitted_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox_events ADD COLUMN resubmitted_at TEXT;
CREATE INDEX IF NOT EXISTS outbox_events_failed ON outbox_events (seq) WHERE status = 'FAILED';
CREATE TABLE IF NOT EXISTS outbox_events_archive (
    seq              INTEGER NOT NULL,
    id               TEXT    NOT NULL,
    tenant_id        TEXT    NOT NULL,
    message_type     TEXT    NOT NULL,
    schema_version   INTEGER NOT NULL,
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          TEXT    NOT NULL,
    headers          TEXT    NOT NULL,
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT    NOT NULL,
    retry_count      INTEGER NOT NULL,
    next_attempt_at  TEXT    NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TEXT,
    occurred_at      TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    last_modified_at TEXT    NOT NULL,
    completed_at     TEXT,
    resubmitted_count INTEGER NOT NULL DEFAULT 0,
    resubmitted_at   TEXT,
    archived_at      TEXT    NOT NULL
);

ALTER TABLE inbox_events ADD COLUMN resubmitted_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox_events ADD COLUMN resubmitted_at TEXT;
CREATE INDEX IF NOT EXISTS inbox_events_failed ON inbox_events (seq) WHERE status = 'FAILED';
CREATE TABLE IF NOT EXISTS inbox_events_archive (
    seq              INTEGER NOT NULL,
    id               TEXT    NOT NULL,
    subscriber       TEXT    NOT NULL,
    tenant_id        TEXT    NOT NULL,
    message_type     TEXT    NOT NULL,
    schema_version   INTEGER NOT NULL,
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          TEXT    NOT NULL,
    headers          TEXT    NOT NULL,
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT    NOT NULL,
    retry_count      INTEGER NOT NULL,
    next_attempt_at  TEXT    NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TEXT,
    occurred_at      TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    last_modified_at TEXT    NOT NULL,
    completed_at     TEXT,
    received_at      TEXT    NOT NULL,
    delivery_count   INTEGER NOT NULL,
    resubmitted_count INTEGER NOT NULL DEFAULT 0,
    resubmitted_at   TEXT,
    archived_at      TEXT    NOT NULL
);

ALTER TABLE outbox_commands ADD COLUMN resubmitted_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox_commands ADD COLUMN resubmitted_at TEXT;
CREATE INDEX IF NOT EXISTS outbox_commands_failed ON outbox_commands (seq) WHERE status = 'FAILED';
CREATE TABLE IF NOT EXISTS outbox_commands_archive (
    seq              INTEGER NOT NULL,
    id               TEXT    NOT NULL,
    tenant_id        TEXT    NOT NULL,
    message_type     TEXT    NOT NULL,
    schema_version   INTEGER NOT NULL,
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          TEXT    NOT NULL,
    headers          TEXT    NOT NULL,
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT    NOT NULL,
    retry_count      INTEGER NOT NULL,
    next_attempt_at  TEXT    NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TEXT,
    occurred_at      TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    last_modified_at TEXT    NOT NULL,
    completed_at     TEXT,
    resubmitted_count INTEGER NOT NULL DEFAULT 0,
    resubmitted_at   TEXT,
    archived_at      TEXT    NOT NULL
);

ALTER TABLE inbox_commands ADD COLUMN resubmitted_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox_commands ADD COLUMN resubmitted_at TEXT;
CREATE INDEX IF NOT EXISTS inbox_commands_failed ON inbox_commands (seq) WHERE status = 'FAILED';
CREATE TABLE IF NOT EXISTS inbox_commands_archive (
    seq              INTEGER NOT NULL,
    id               TEXT    NOT NULL,
    subscriber       TEXT    NOT NULL,
    tenant_id        TEXT    NOT NULL,
    message_type     TEXT    NOT NULL,
    schema_version   INTEGER NOT NULL,
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          TEXT    NOT NULL,
    headers          TEXT    NOT NULL,
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT    NOT NULL,
    retry_count      INTEGER NOT NULL,
    next_attempt_at  TEXT    NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TEXT,
    occurred_at      TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    last_modified_at TEXT    NOT NULL,
    completed_at     TEXT,
    received_at      TEXT    NOT NULL,
    delivery_count   INTEGER NOT NULL,
    resubmitted_count INTEGER NOT NULL DEFAULT 0,
    resubmitted_at   TEXT,
    archived_at      TEXT    NOT NULL
);
