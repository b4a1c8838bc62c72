-- Transaction marks: a batched handler transaction writes a random mark here first, so that
-- when a handler ends the transaction itself (`COMMIT` or `ROLLBACK` on its connection) the
-- worker can tell from another connection whether the work of the chunk committed (the
-- mark is there) or not, instead of running the chunk's handled messages again on a guess.
-- Writing first also makes the chunk a writer from its first statement (no stale snapshot
-- for its handlers' writes). Marks older than an hour are deleted now and then by the
-- marking transactions themselves.
CREATE TABLE IF NOT EXISTS transaction_marks (
    mark INTEGER PRIMARY KEY,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS transaction_marks_at ON transaction_marks (at);
