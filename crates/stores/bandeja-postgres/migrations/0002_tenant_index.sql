-- Tenants: per-tenant claims walk one tenant's live rows by seq, and per-key order is per
-- tenant, so the key index leads with the tenant (and, in inboxes, the subscriber).
CREATE INDEX IF NOT EXISTS outbox_events_live_tenant ON outbox_events (tenant_id, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS inbox_events_live_tenant ON inbox_events (tenant_id, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS outbox_commands_live_tenant ON outbox_commands (tenant_id, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS inbox_commands_live_tenant ON inbox_commands (tenant_id, seq) WHERE status IN ('PENDING', 'PROCESSING');

DROP INDEX IF EXISTS outbox_events_live_key;
DROP INDEX IF EXISTS inbox_events_live_key;
DROP INDEX IF EXISTS outbox_commands_live_key;
DROP INDEX IF EXISTS inbox_commands_live_key;
CREATE INDEX IF NOT EXISTS outbox_events_live_key ON outbox_events (tenant_id, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS inbox_events_live_key ON inbox_events (subscriber, tenant_id, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS outbox_commands_live_key ON outbox_commands (tenant_id, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS inbox_commands_live_key ON inbox_commands (subscriber, tenant_id, partition_key, seq) WHERE status IN ('PENDING', 'PROCESSING');
