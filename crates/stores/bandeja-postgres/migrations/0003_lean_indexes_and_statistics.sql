-- The all-rows `(tenant_id, status)` indexes grow with history and every non-HOT update of a
-- live row writes an entry into them; nothing reads them any more (per-tenant claims and the
-- active-tenant scan use the PENDING-only `*_live_tenant` indexes). Dropping them makes each
-- state change one index write cheaper and keeps vacuum of a box from scanning them.
DROP INDEX IF EXISTS outbox_events_tenant_status;
DROP INDEX IF EXISTS inbox_events_tenant_status;
DROP INDEX IF EXISTS outbox_commands_tenant_status;
DROP INDEX IF EXISTS inbox_commands_tenant_status;

-- Statistics of the columns claims filter and sort on, sampled small: the store analyzes a
-- busy box often (see its housekeeping), and a 3,000-row sample keeps that cheap and of the
-- same cost however much history the table holds. Other columns keep the server default.
ALTER TABLE outbox_events
    ALTER COLUMN status SET STATISTICS 10, ALTER COLUMN seq SET STATISTICS 10,
    ALTER COLUMN tenant_id SET STATISTICS 10, ALTER COLUMN partition_key SET STATISTICS 10,
    ALTER COLUMN next_attempt_at SET STATISTICS 10, ALTER COLUMN locked_until SET STATISTICS 10;
ALTER TABLE outbox_commands
    ALTER COLUMN status SET STATISTICS 10, ALTER COLUMN seq SET STATISTICS 10,
    ALTER COLUMN tenant_id SET STATISTICS 10, ALTER COLUMN partition_key SET STATISTICS 10,
    ALTER COLUMN next_attempt_at SET STATISTICS 10, ALTER COLUMN locked_until SET STATISTICS 10;
ALTER TABLE inbox_events
    ALTER COLUMN status SET STATISTICS 10, ALTER COLUMN seq SET STATISTICS 10,
    ALTER COLUMN tenant_id SET STATISTICS 10, ALTER COLUMN partition_key SET STATISTICS 10,
    ALTER COLUMN next_attempt_at SET STATISTICS 10, ALTER COLUMN locked_until SET STATISTICS 10,
    ALTER COLUMN subscriber SET STATISTICS 10;
ALTER TABLE inbox_commands
    ALTER COLUMN status SET STATISTICS 10, ALTER COLUMN seq SET STATISTICS 10,
    ALTER COLUMN tenant_id SET STATISTICS 10, ALTER COLUMN partition_key SET STATISTICS 10,
    ALTER COLUMN next_attempt_at SET STATISTICS 10, ALTER COLUMN locked_until SET STATISTICS 10,
    ALTER COLUMN subscriber SET STATISTICS 10;
