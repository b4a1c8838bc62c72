-- The per-key order check ("is there an older live row of this key?") must be one probe of
-- the key's index. With the same predicate on `<box>_live` (seq only) and `<box>_live_key`,
-- a planner working from statistics taken while the box looked empty (a burst landing on a
-- quiet box) estimated one row for either and sometimes walked `<box>_live` by `seq`,
-- filtering on the key: claims of 4-49 s early in a three-process drain of 200,000.
--
-- The key index now carries a predicate only the key check implies: the check spells the
-- live statuses as `status NOT IN ('COMPLETED', 'FAILED')` (the same rows, by the CHECK
-- constraint of 0001; PostgreSQL does not prove `status IN ('PENDING', 'PROCESSING')` from
-- it, so `<box>_live` cannot serve the check), and its `partition_key = ...` implies
-- `partition_key IS NOT NULL`, which the claims' own scan does not (so they cannot pick this
-- index for their ordered walk). Rows without a key leave this index altogether.
DROP INDEX IF EXISTS outbox_events_live_key;
DROP INDEX IF EXISTS inbox_events_live_key;
DROP INDEX IF EXISTS outbox_commands_live_key;
DROP INDEX IF EXISTS inbox_commands_live_key;
CREATE INDEX IF NOT EXISTS outbox_events_live_key ON outbox_events (tenant_id, partition_key, seq)
    WHERE status NOT IN ('COMPLETED', 'FAILED') AND partition_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS inbox_events_live_key ON inbox_events (subscriber, tenant_id, partition_key, seq)
    WHERE status NOT IN ('COMPLETED', 'FAILED') AND partition_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_commands_live_key ON outbox_commands (tenant_id, partition_key, seq)
    WHERE status NOT IN ('COMPLETED', 'FAILED') AND partition_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS inbox_commands_live_key ON inbox_commands (subscriber, tenant_id, partition_key, seq)
    WHERE status NOT IN ('COMPLETED', 'FAILED') AND partition_key IS NOT NULL;
