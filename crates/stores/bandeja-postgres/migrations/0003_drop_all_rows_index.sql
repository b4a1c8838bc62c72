-- The all-rows `(tenant_id, status)` indexes grow with history and every non-HOT update of a
-- live row writes an entry into them; nothing reads them any more (per-tenant claims and the
-- active-tenant scan use the PENDING-only `*_live_tenant` indexes). Dropping them makes each
-- state change one index write cheaper and keeps vacuum of a box from scanning them.
DROP INDEX IF EXISTS outbox_events_tenant_status;
DROP INDEX IF EXISTS inbox_events_tenant_status;
DROP INDEX IF EXISTS outbox_commands_tenant_status;
DROP INDEX IF EXISTS inbox_commands_tenant_status;
