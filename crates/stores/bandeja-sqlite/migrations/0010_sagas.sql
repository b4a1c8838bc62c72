-- Orchestrated sagas: one row per saga (`bandeja_core::sagas`). `state` holds the whole
-- state as JSON (step, phase, attempt, data, history, …: `SagaState`); the columns beside
-- it are what listings and the sweeper of late replies select on. `deadline` (ISO-8601 UTC
-- text, millisecond precision, like the boxes' times) is set while a reply is awaited and
-- the saga still moves; `version` goes up with every change, which is written only over
-- the version read.
CREATE TABLE IF NOT EXISTS sagas (
    id             TEXT    NOT NULL PRIMARY KEY,
    saga_type      TEXT    NOT NULL,
    status         TEXT    NOT NULL
        CHECK (status IN ('RUNNING', 'COMPENSATING', 'COMPLETED', 'COMPENSATED', 'FAILED')),
    deadline       TEXT,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL,
    version        INTEGER NOT NULL,
    state          TEXT    NOT NULL
);
-- Late replies: only the sagas that await one.
CREATE INDEX IF NOT EXISTS sagas_deadline ON sagas (deadline) WHERE deadline IS NOT NULL;
-- Listings, newest first, by type and status.
CREATE INDEX IF NOT EXISTS sagas_type_status ON sagas (saga_type, status, created_at);
CREATE INDEX IF NOT EXISTS sagas_created ON sagas (created_at);
