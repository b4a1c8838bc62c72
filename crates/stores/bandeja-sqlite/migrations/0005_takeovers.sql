-- Lease takeovers counted apart from failed attempts. `takeover_count`: how many times a
-- worker took the row over because the lease of the worker holding it had run out (that
-- worker stopped: a crash, a kill). `retry_count` counts only attempts that failed.
ALTER TABLE outbox_events ADD COLUMN takeover_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox_commands ADD COLUMN takeover_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox_events ADD COLUMN takeover_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox_commands ADD COLUMN takeover_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox_events_archive ADD COLUMN takeover_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox_commands_archive ADD COLUMN takeover_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox_events_archive ADD COLUMN takeover_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox_commands_archive ADD COLUMN takeover_count INTEGER NOT NULL DEFAULT 0;
