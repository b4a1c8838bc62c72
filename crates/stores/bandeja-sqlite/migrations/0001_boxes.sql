-- The four boxes of bandeja on SQLite. Times are UTC text 'YYYY-MM-DDTHH:MM:SS.fffZ'
-- (fixed width, so they compare as text). `seq` is the rowid: monotonic insertion order.
-- Partial indexes cover only live rows (PENDING, PROCESSING), so claims stay fast however
-- many COMPLETED rows accumulate.

CREATE TABLE outbox_events (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL,
    tenant_id        TEXT    NOT NULL,
    message_type     TEXT    NOT NULL,
    schema_version   INTEGER NOT NULL,
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          TEXT    NOT NULL CHECK (json_valid(payload)),
    headers          TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(headers)),
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT    NOT NULL DEFAULT 'PENDING'
                     CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
    retry_count      INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT    NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TEXT,
    occurred_at      TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    last_modified_at TEXT    NOT NULL,
    completed_at     TEXT,
    UNIQUE (id)
);
CREATE INDEX outbox_events_live ON outbox_events (seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX outbox_events_live_key ON outbox_events (partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX outbox_events_tenant_status ON outbox_events (tenant_id, status);

CREATE TABLE outbox_commands (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL,
    tenant_id        TEXT    NOT NULL,
    message_type     TEXT    NOT NULL,
    schema_version   INTEGER NOT NULL,
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          TEXT    NOT NULL CHECK (json_valid(payload)),
    headers          TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(headers)),
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT    NOT NULL DEFAULT 'PENDING'
                     CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
    retry_count      INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT    NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TEXT,
    occurred_at      TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    last_modified_at TEXT    NOT NULL,
    completed_at     TEXT,
    UNIQUE (id)
);
CREATE INDEX outbox_commands_live ON outbox_commands (seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX outbox_commands_live_key ON outbox_commands (partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX outbox_commands_tenant_status ON outbox_commands (tenant_id, status);

CREATE TABLE inbox_events (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL,
    subscriber       TEXT    NOT NULL,
    tenant_id        TEXT    NOT NULL,
    message_type     TEXT    NOT NULL,
    schema_version   INTEGER NOT NULL,
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          TEXT    NOT NULL CHECK (json_valid(payload)),
    headers          TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(headers)),
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT    NOT NULL DEFAULT 'PENDING'
                     CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
    retry_count      INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT    NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TEXT,
    occurred_at      TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    last_modified_at TEXT    NOT NULL,
    completed_at     TEXT,
    received_at      TEXT    NOT NULL,
    delivery_count   INTEGER NOT NULL DEFAULT 1,
    UNIQUE (id, subscriber)
);
CREATE INDEX inbox_events_live ON inbox_events (seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX inbox_events_live_key ON inbox_events (subscriber, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX inbox_events_tenant_status ON inbox_events (tenant_id, status);

CREATE TABLE inbox_commands (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL,
    subscriber       TEXT    NOT NULL,
    tenant_id        TEXT    NOT NULL,
    message_type     TEXT    NOT NULL,
    schema_version   INTEGER NOT NULL,
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          TEXT    NOT NULL CHECK (json_valid(payload)),
    headers          TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(headers)),
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT    NOT NULL DEFAULT 'PENDING'
                     CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
    retry_count      INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT    NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TEXT,
    occurred_at      TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    last_modified_at TEXT    NOT NULL,
    completed_at     TEXT,
    received_at      TEXT    NOT NULL,
    delivery_count   INTEGER NOT NULL DEFAULT 1,
    UNIQUE (id, subscriber)
);
CREATE INDEX inbox_commands_live ON inbox_commands (seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX inbox_commands_live_key ON inbox_commands (subscriber, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX inbox_commands_tenant_status ON inbox_commands (tenant_id, status);
