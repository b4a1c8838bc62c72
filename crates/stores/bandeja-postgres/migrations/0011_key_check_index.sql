-- The per-key order check ("is there an older live row of this key?") must be one probe of
-- the key's index. With the same predicate on `<box>_live` (seq only) and on the key index
-- of 0002 (`<box>_live_key`), a planner working from statistics taken while the box looked
-- empty or finished (a burst landing on a quiet box) estimated one row for either and
-- sometimes walked `<box>_live` by `seq`, filtering on the key: claims of seconds, and
-- three-process drains of 200,000 that stalled for minutes.
--
-- The key index is now `<box>_key_check`, with a predicate only the key check implies: the
-- check spells the live statuses as `status NOT IN ('COMPLETED', 'FAILED')` (the same rows,
-- by the CHECK constraint of 0001; PostgreSQL does not prove `status IN ('PENDING',
-- 'PROCESSING')` from it, so `<box>_live` cannot serve the check), and its `partition_key =
-- ...` implies `partition_key IS NOT NULL`, which the claims' own walk does not (so it cannot
-- take this index). Rows without a key are not in it.
--
-- Built inside the migration's transaction: a plain CREATE INDEX blocks writes to its box
-- while it reads the table, history included. For large boxes build the four beforehand with
-- CREATE INDEX CONCURRENTLY (docs/operations.md, "Upgrading: the key check's index"); this
-- migration then finds them, and only drops the old indexes.
CREATE INDEX IF NOT EXISTS outbox_events_key_check ON outbox_events (tenant_id, partition_key, seq)
    WHERE status NOT IN ('COMPLETED', 'FAILED') AND partition_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS inbox_events_key_check ON inbox_events (subscriber, tenant_id, partition_key, seq)
    WHERE status NOT IN ('COMPLETED', 'FAILED') AND partition_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_commands_key_check ON outbox_commands (tenant_id, partition_key, seq)
    WHERE status NOT IN ('COMPLETED', 'FAILED') AND partition_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS inbox_commands_key_check ON inbox_commands (subscriber, tenant_id, partition_key, seq)
    WHERE status NOT IN ('COMPLETED', 'FAILED') AND partition_key IS NOT NULL;
DROP INDEX IF EXISTS outbox_events_live_key;
DROP INDEX IF EXISTS inbox_events_live_key;
DROP INDEX IF EXISTS outbox_commands_live_key;
DROP INDEX IF EXISTS inbox_commands_live_key;
