-- Completion modes (`completion-mode = "delete"` / `"archive"`) and retention.
--
-- `<inbox>_dedup`: the dedup ledger of an inbox whose completed rows are deleted or
-- archived. Each inbox insert in those modes records `(id, subscriber)` here first
-- (`ON CONFLICT DO NOTHING`) and inserts only the pairs it recorded, so a redelivered
-- message is absorbed even after its row is gone. The primary key serializes concurrent
-- receptions of one message. Retention deletes records received before its window whose
-- inbox row is gone (the index on `received_at`).
CREATE TABLE IF NOT EXISTS inbox_events_dedup (
    id          UUID        NOT NULL,
    subscriber  TEXT        NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, subscriber)
);
CREATE INDEX IF NOT EXISTS inbox_events_dedup_received ON inbox_events_dedup (received_at);

CREATE TABLE IF NOT EXISTS inbox_commands_dedup (
    id          UUID        NOT NULL,
    subscriber  TEXT        NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, subscriber)
);
CREATE INDEX IF NOT EXISTS inbox_commands_dedup_received ON inbox_commands_dedup (received_at);
