-- Lease takeovers counted apart from failed attempts. `takeover_count`: how many times a
-- worker took the row over because the lease of the worker holding it had run out (that
-- worker stopped: a crash, a kill, a lost connection). `retry_count` counts only attempts
-- that failed. Constant default: adding the column rewrites nothing.
ALTER TABLE outbox_events ADD COLUMN IF NOT EXISTS takeover_count INT NOT NULL DEFAULT 0 CHECK (takeover_count >= 0);
ALTER TABLE outbox_commands ADD COLUMN IF NOT EXISTS takeover_count INT NOT NULL DEFAULT 0 CHECK (takeover_count >= 0);
ALTER TABLE inbox_events ADD COLUMN IF NOT EXISTS takeover_count INT NOT NULL DEFAULT 0 CHECK (takeover_count >= 0);
ALTER TABLE inbox_commands ADD COLUMN IF NOT EXISTS takeover_count INT NOT NULL DEFAULT 0 CHECK (takeover_count >= 0);
ALTER TABLE outbox_events_archive ADD COLUMN IF NOT EXISTS takeover_count INT NOT NULL DEFAULT 0;
ALTER TABLE outbox_commands_archive ADD COLUMN IF NOT EXISTS takeover_count INT NOT NULL DEFAULT 0;
ALTER TABLE inbox_events_archive ADD COLUMN IF NOT EXISTS takeover_count INT NOT NULL DEFAULT 0;
ALTER TABLE inbox_commands_archive ADD COLUMN IF NOT EXISTS takeover_count INT NOT NULL DEFAULT 0;
