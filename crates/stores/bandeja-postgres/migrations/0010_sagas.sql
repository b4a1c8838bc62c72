-- Orchestrated sagas: one row per saga (`bandeja_core::sagas`). `state` holds the whole
-- state (step, phase, attempt, data, history, …: `SagaState`); the columns beside it are
-- what listings and the sweeper of late replies select on. `deadline` is set while a reply
-- is awaited and the saga still moves; `version` goes up with every change, which is
-- written only over the version read (and the row is read `FOR UPDATE` by the
-- transaction that moves the saga). Safe to run again: every statement is
-- `IF NOT EXISTS`.
CREATE TABLE IF NOT EXISTS sagas (
    id         UUID        NOT NULL PRIMARY KEY,
    saga_type  TEXT        NOT NULL,
    status     TEXT        NOT NULL
        CHECK (status IN ('RUNNING', 'COMPENSATING', 'COMPLETED', 'COMPENSATED', 'FAILED')),
    deadline   TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    version    BIGINT      NOT NULL,
    state      JSONB       NOT NULL
);
-- Late replies: only the sagas that await one.
CREATE INDEX IF NOT EXISTS sagas_deadline ON sagas (deadline) WHERE deadline IS NOT NULL;
-- Listings, newest first, by type and status.
CREATE INDEX IF NOT EXISTS sagas_type_status ON sagas (saga_type, status, created_at);
CREATE INDEX IF NOT EXISTS sagas_created ON sagas (created_at);
