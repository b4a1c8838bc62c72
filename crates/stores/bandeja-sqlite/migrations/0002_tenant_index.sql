-- Per-tenant claims and the active-tenant scan walk the live rows of one tenant by seq.
CREATE INDEX IF NOT EXISTS outbox_events_live_tenant ON outbox_events (tenant_id, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS inbox_events_live_tenant ON inbox_events (tenant_id, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS outbox_commands_live_tenant ON outbox_commands (tenant_id, seq) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX IF NOT EXISTS inbox_commands_live_tenant ON inbox_commands (tenant_id, seq) WHERE status IN ('PENDING', 'PROCESSING');
