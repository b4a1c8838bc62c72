-- Subscriptions in the database: who subscribes to what, and which processes run them. The
-- in-process relay fans out from `subscriptions` (one inbox row per subscription of the
-- message's type), reception from a broker from the subscriptions of its service, so a fleet
-- of mixed versions routes from one truth.
--
-- `subscriptions`: one row per kind, message type, subscriber and tenant filter ('' = every
-- tenant). `first_seen_at`: when a process first registered it; `last_seen_at`: the last
-- refresh by a running process that runs it; `service`: the service of that process ('' for
-- none). A row ends only when an operator retires the subscription. Times as the boxes
-- store them (ISO-8601 UTC text, millisecond precision).
CREATE TABLE IF NOT EXISTS subscriptions (
    kind          TEXT NOT NULL CHECK (kind IN ('event', 'command')),
    message_type  TEXT NOT NULL,
    subscriber    TEXT NOT NULL,
    tenant_id     TEXT NOT NULL DEFAULT '',
    service       TEXT NOT NULL DEFAULT '',
    first_seen_at TEXT NOT NULL,
    last_seen_at  TEXT NOT NULL,
    PRIMARY KEY (kind, message_type, subscriber, tenant_id)
);

-- `subscription_processes`: one row per running process and subscriber it runs, refreshed by
-- its heartbeat and removed when it stops; a killed process's rows stop counting as live
-- three heartbeats later.
CREATE TABLE IF NOT EXISTS subscription_processes (
    process      TEXT    NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('event', 'command')),
    subscriber   TEXT    NOT NULL,
    service      TEXT    NOT NULL DEFAULT '',
    host         TEXT    NOT NULL,
    pid          INTEGER NOT NULL,
    started_at   TEXT    NOT NULL,
    last_seen_at TEXT    NOT NULL,
    PRIMARY KEY (process, kind, subscriber)
);
CREATE INDEX IF NOT EXISTS subscription_processes_subscriber
    ON subscription_processes (kind, subscriber);
