-- The all-rows `(tenant_id, status)` indexes (as PostgreSQL's migration 0003 did): every
-- state change of a row wrote two entries into them, they grow with the history, and what
-- read them no longer needs them (per-tenant claims and the active-tenant scan use the
-- PENDING-only `*_live_tenant` indexes). Worse, SQLite's planner chose them for "is any row
-- live?" probes, a scan of every row, where the live partial indexes answer at once.
DROP INDEX IF EXISTS outbox_events_tenant_status;
DROP INDEX IF EXISTS inbox_events_tenant_status;
DROP INDEX IF EXISTS outbox_commands_tenant_status;
DROP INDEX IF EXISTS inbox_commands_tenant_status;
