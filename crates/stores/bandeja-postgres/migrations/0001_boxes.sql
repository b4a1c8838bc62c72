-- The four boxes of bandeja on PostgreSQL. This file uses unqualified names: the store runs it
-- with `search_path` set to its schema only (default `bandeja`), so the tables and sqlx's
-- `_sqlx_migrations` land in that schema.
--
-- `seq` is an identity column: monotonic insertion order. Times are TIMESTAMPTZ written with the
-- database clock. Partial indexes cover only live rows (PENDING, PROCESSING), so claims stay
-- fast however many COMPLETED rows accumulate.

CREATE TABLE outbox_events (
    seq              BIGINT      GENERATED ALWAYS AS IDENTITY,
    id               UUID        NOT NULL,
    tenant_id        TEXT        NOT NULL,
    message_type     TEXT        NOT NULL,
    schema_version   INT         NOT NULL CHECK (schema_version >= 0),
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          JSONB       NOT NULL,
    headers          JSONB       NOT NULL DEFAULT '{}',
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT        NOT NULL DEFAULT 'PENDING'
                     CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
    retry_count      INT         NOT NULL DEFAULT 0 CHECK (retry_count >= 0),
    next_attempt_at  TIMESTAMPTZ NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TIMESTAMPTZ,
    occurred_at      TIMESTAMPTZ NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    last_modified_at TIMESTAMPTZ NOT NULL,
    completed_at     TIMESTAMPTZ,
    PRIMARY KEY (id)
);
CREATE INDEX outbox_events_live ON outbox_events (seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX outbox_events_live_key ON outbox_events (partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX outbox_events_tenant_status ON outbox_events (tenant_id, status);

CREATE TABLE outbox_commands (
    seq              BIGINT      GENERATED ALWAYS AS IDENTITY,
    id               UUID        NOT NULL,
    tenant_id        TEXT        NOT NULL,
    message_type     TEXT        NOT NULL,
    schema_version   INT         NOT NULL CHECK (schema_version >= 0),
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          JSONB       NOT NULL,
    headers          JSONB       NOT NULL DEFAULT '{}',
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT        NOT NULL DEFAULT 'PENDING'
                     CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
    retry_count      INT         NOT NULL DEFAULT 0 CHECK (retry_count >= 0),
    next_attempt_at  TIMESTAMPTZ NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TIMESTAMPTZ,
    occurred_at      TIMESTAMPTZ NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    last_modified_at TIMESTAMPTZ NOT NULL,
    completed_at     TIMESTAMPTZ,
    PRIMARY KEY (id)
);
CREATE INDEX outbox_commands_live ON outbox_commands (seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX outbox_commands_live_key ON outbox_commands (partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX outbox_commands_tenant_status ON outbox_commands (tenant_id, status);

CREATE TABLE inbox_events (
    seq              BIGINT      GENERATED ALWAYS AS IDENTITY,
    id               UUID        NOT NULL,
    subscriber       TEXT        NOT NULL,
    tenant_id        TEXT        NOT NULL,
    message_type     TEXT        NOT NULL,
    schema_version   INT         NOT NULL CHECK (schema_version >= 0),
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          JSONB       NOT NULL,
    headers          JSONB       NOT NULL DEFAULT '{}',
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT        NOT NULL DEFAULT 'PENDING'
                     CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
    retry_count      INT         NOT NULL DEFAULT 0 CHECK (retry_count >= 0),
    next_attempt_at  TIMESTAMPTZ NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TIMESTAMPTZ,
    occurred_at      TIMESTAMPTZ NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    last_modified_at TIMESTAMPTZ NOT NULL,
    completed_at     TIMESTAMPTZ,
    received_at      TIMESTAMPTZ NOT NULL,
    delivery_count   INT         NOT NULL DEFAULT 1 CHECK (delivery_count >= 1),
    PRIMARY KEY (id, subscriber)
);
CREATE INDEX inbox_events_live ON inbox_events (seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX inbox_events_live_key ON inbox_events (subscriber, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX inbox_events_tenant_status ON inbox_events (tenant_id, status);

CREATE TABLE inbox_commands (
    seq              BIGINT      GENERATED ALWAYS AS IDENTITY,
    id               UUID        NOT NULL,
    subscriber       TEXT        NOT NULL,
    tenant_id        TEXT        NOT NULL,
    message_type     TEXT        NOT NULL,
    schema_version   INT         NOT NULL CHECK (schema_version >= 0),
    partition_key    TEXT,
    aggregate_type   TEXT,
    aggregate_id     TEXT,
    payload          JSONB       NOT NULL,
    headers          JSONB       NOT NULL DEFAULT '{}',
    source_tenant_id TEXT,
    target_tenant_id TEXT,
    target_service   TEXT,
    status           TEXT        NOT NULL DEFAULT 'PENDING'
                     CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
    retry_count      INT         NOT NULL DEFAULT 0 CHECK (retry_count >= 0),
    next_attempt_at  TIMESTAMPTZ NOT NULL,
    last_error       TEXT,
    locked_by        TEXT,
    locked_until     TIMESTAMPTZ,
    occurred_at      TIMESTAMPTZ NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    last_modified_at TIMESTAMPTZ NOT NULL,
    completed_at     TIMESTAMPTZ,
    received_at      TIMESTAMPTZ NOT NULL,
    delivery_count   INT         NOT NULL DEFAULT 1 CHECK (delivery_count >= 1),
    PRIMARY KEY (id, subscriber)
);
CREATE INDEX inbox_commands_live ON inbox_commands (seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX inbox_commands_live_key ON inbox_commands (subscriber, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX inbox_commands_tenant_status ON inbox_commands (tenant_id, status);
