-- Tenants: per-tenant claims walk one tenant's PENDING rows by seq (PENDING only, so the
-- planner never picks this index for the per-key order check, which must use the key
-- index), and per-key order is per tenant, so the key index leads with the tenant (and, in
-- inboxes, the subscriber).
CREATE INDEX IF NOT EXISTS outbox_events_live_tenant ON outbox_events (tenant_id, seq) WHERE status = 'PENDING';
CREATE INDEX IF NOT EXISTS inbox_events_live_tenant ON inbox_events (tenant_id, seq) WHERE status = 'PENDING';
CREATE INDEX IF NOT EXISTS outbox_commands_live_tenant ON outbox_commands (tenant_id, seq) WHERE status = 'PENDING';
CREATE INDEX IF NOT EXISTS inbox_commands_live_tenant ON inbox_commands (tenant_id, seq) WHERE status = 'PENDING';

DROP INDEX IF EXISTS outbox_events_live_key;
DROP INDEX IF EXISTS inbox_events_live_key;
DROP INDEX IF EXISTS outbox_commands_live_key;
DROP INDEX IF EXISTS inbox_commands_live_key;
CREATE INDEX IF NOT EXISTS outbox_events_live_key ON outbox_events (tenant_id, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS inbox_events_live_key ON inbox_events (subscriber, tenant_id, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS outbox_commands_live_key ON outbox_commands (tenant_id, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS inbox_commands_live_key ON inbox_commands (subscriber, tenant_id, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
