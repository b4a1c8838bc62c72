-- Statistics of `id`, sampled small like the claim columns (0003). Outcome writes and
-- outbox marks find their rows with `id = ANY($1)`; without statistics of `id` the planner
-- takes 50 ids for a quarter of the table and scans all of it (a second per statement at
-- two million rows). The store's housekeeping analyzes `id` with the claim columns, and
-- analyzes each box once now so that existing boxes get the statistics at once.
ALTER TABLE outbox_events ALTER COLUMN id SET STATISTICS 10;
ALTER TABLE outbox_commands ALTER COLUMN id SET STATISTICS 10;
ALTER TABLE inbox_events ALTER COLUMN id SET STATISTICS 10;
ALTER TABLE inbox_commands ALTER COLUMN id SET STATISTICS 10;
ANALYZE outbox_events (id);
ANALYZE outbox_commands (id);
ANALYZE inbox_events (id);
ANALYZE inbox_commands (id);
