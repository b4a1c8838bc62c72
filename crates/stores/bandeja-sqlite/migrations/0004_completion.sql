-- Completion modes (`completion-mode = "delete"` / `"archive"`) and retention.
--
-- `<inbox>_dedup`: the dedup ledger of an inbox whose completed rows are deleted or
-- archived. Each inbox insert in those modes skips the pairs the ledger holds whose row is
-- gone, then records its pairs here, so a redelivered message is absorbed even after its
-- row was removed. Retention deletes records received before its window whose inbox row is
-- gone (the index on `received_at`).
CREATE TABLE IF NOT EXISTS inbox_events_dedup (
    id          TEXT NOT NULL,
    subscriber  TEXT NOT NULL,
    received_at TEXT NOT NULL,
    UNIQUE (id, subscriber)
);
CREATE INDEX IF NOT EXISTS inbox_events_dedup_received ON inbox_events_dedup (received_at);

CREATE TABLE IF NOT EXISTS inbox_commands_dedup (
    id          TEXT NOT NULL,
    subscriber  TEXT NOT NULL,
    received_at TEXT NOT NULL,
    UNIQUE (id, subscriber)
);
CREATE INDEX IF NOT EXISTS inbox_commands_dedup_received ON inbox_commands_dedup (received_at);
