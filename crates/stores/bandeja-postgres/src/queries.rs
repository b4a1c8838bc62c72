//! The SQL of one box, formatted once per store with the schema-qualified table name, so a
//! caller's transaction writes into the store's schema whatever its `search_path`.

use bandeja_core::config::CompletionModes;
use bandeja_core::{BoxKind, CompletionMode};

use crate::completion;

/// The database clock: the start of the current statement (inside a long transaction this
/// is still the time of the write, unlike `now()`).
pub(crate) const NOW: &str = "statement_timestamp()";

/// "Row `o` is live", as the per-key order check spells it: the same rows as
/// `status IN ('PENDING', 'PROCESSING')` (the box's CHECK constraint allows four statuses),
/// but PostgreSQL does not prove the `<box>_live` index's predicate from this spelling, so
/// the check probes the key's own index (`<box>_key_check`, migration 0011) and can never
/// walk `<box>_live`, whatever the statistics say. From statistics taken while a box looked
/// empty the planner otherwise walked `<box>_live` by `seq`, filtering on the key: claims of
/// seconds.
pub(crate) const KEY_CHECK_LIVE: &str = "o.status NOT IN ('COMPLETED', 'FAILED')";

/// "Row `t` is PROCESSING", as the outcome writes spell it: they find their rows by id, and
/// with `t.status = 'PROCESSING'` a planner that believed the box nearly empty walked the
/// whole `<box>_live` index, filtering on the ids, instead of probing the primary key (3 s a
/// statement early in a three-process drain). PostgreSQL does not prove the live index's
/// predicate from this spelling; by the CHECK constraint it is the same rows.
pub(crate) const HELD: &str = "t.status NOT IN ('PENDING', 'COMPLETED', 'FAILED')";

/// The columns every box shares, in the order `decode` reads them.
pub(crate) const COMMON_COLUMNS: [&str; 23] = [
    "seq",
    "id",
    "tenant_id",
    "message_type",
    "schema_version",
    "partition_key",
    "aggregate_type",
    "aggregate_id",
    "payload",
    "headers",
    "source_tenant_id",
    "target_tenant_id",
    "target_service",
    "status",
    "retry_count",
    "next_attempt_at",
    "last_error",
    "locked_by",
    "locked_until",
    "occurred_at",
    "created_at",
    "completed_at",
    "takeover_count",
];

/// The outcome arrays of `resolve` (`$1..$6`) and the names `j` gives their elements.
pub(crate) const OUTCOME_ARRAYS: &str =
    "$1::uuid[], $2::text[], $3::text[], $4::int4[], $5::float8[], $6::text[]";
pub(crate) const OUTCOME_FIELDS: &str = "id, sub, status, retry_count, delay, error";

/// The message columns written on insert (after `id` and, for inboxes, `subscriber`), with
/// the array type each is bound as.
const MESSAGE_COLUMNS: [(&str, &str); 12] = [
    ("tenant_id", "text"),
    ("message_type", "text"),
    ("schema_version", "int4"),
    ("partition_key", "text"),
    ("aggregate_type", "text"),
    ("aggregate_id", "text"),
    ("payload", "text"),
    ("headers", "text"),
    ("source_tenant_id", "text"),
    ("target_tenant_id", "text"),
    ("target_service", "text"),
    ("occurred_at", "timestamptz"),
];

/// The statements of one box.
pub(crate) struct BoxQueries {
    /// `$1` ordered, `$2` limit, `$3` worker, `$4` lease in seconds, `$5` floor seq.
    pub(crate) claim: String,
    /// As `claim`, only the rows of tenant `$6`.
    pub(crate) claim_tenant: String,
    /// The tenants with live rows (a loose index scan over `(tenant_id, seq)`).
    pub(crate) tenants: String,
    /// What completing a row of this box does.
    pub(crate) mode: CompletionMode,
    /// `$1..$6` outcome arrays (id, subscriber, status, retry count, delay s, error), `$7` worker.
    /// In `update` mode an `UPDATE` (rows affected); otherwise it returns the count `n`.
    pub(crate) resolve: String,
    /// As `resolve`, also recording the failed attempts (see `attempts`): for outcome
    /// batches holding a failure only.
    pub(crate) resolve_failing: String,
    /// Retention: `$1` age in seconds; returns the count `n` of rows and records deleted.
    pub(crate) purge: String,
    /// Staleness: `$1`/`$3` thresholds in seconds, `$2`/`$4` reasons; returns `(pending, processing)`.
    pub(crate) fail_stale: String,
    /// Every row of `<box>_archive` by `seq`.
    pub(crate) archived: String,
    /// `$1` id, `$2` worker, `$3` subscriber.
    pub(crate) complete: String,
    /// `$1` worker, `$2` lease in seconds: every row the worker still holds gets a new
    /// lease; returns `(id, subscriber)` of each. Rows locked right now (the worker's own
    /// completion in flight, or a claim taking them over) are skipped, never waited for:
    /// a renewal never blocks on, or deadlocks with, the worker's own transactions.
    pub(crate) renew: String,
    /// Every row by `seq`.
    pub(crate) rows: String,
    /// The smallest live `seq`.
    pub(crate) floor: String,
    /// Outboxes: the in-process transport in one statement (see [`relay`]); `$6` tenant or
    /// NULL, `$7..$9` routes (message type, subscriber, tenant filter).
    pub(crate) relay: String,
    /// As `relay`, only the rows of tenant `$6`.
    pub(crate) relay_tenant: String,
    /// Outboxes: `$1` ids, `$2..$13` message columns. Inboxes: `$1` ids, `$2` subscribers,
    /// `$3..$14` message columns, `$15` deliveries per row; returns
    /// `(id, subscriber, delivery_count)`. Both notify the channel when rows were written.
    pub(crate) insert: String,
}

/// `prefix` + each column, and the subscriber / delivery count (constants for outboxes).
pub(crate) fn column_list(prefix: &str, inbox: bool) -> String {
    let mut columns: Vec<String> = COMMON_COLUMNS
        .iter()
        .map(|c| format!("{prefix}{c}"))
        .collect();
    if inbox {
        columns.push(format!("{prefix}subscriber"));
        columns.push(format!("{prefix}delivery_count"));
    } else {
        columns.push("NULL::text AS subscriber".to_owned());
        columns.push("1 AS delivery_count".to_owned());
    }
    columns.join(", ")
}

impl BoxQueries {
    pub(crate) fn new(
        schema: &str,
        channel: &str,
        box_kind: BoxKind,
        modes: CompletionModes,
    ) -> Self {
        let name = box_kind.table();
        let t = format!("\"{schema}\".{name}");
        let inbox = box_kind.is_inbox();
        let mode = modes.of(box_kind);
        let relay_modes = (mode, modes.of(box_kind.kind().inbox()));
        let (same_subscriber, subscriber_join) = if inbox {
            (
                "AND o.subscriber = c.subscriber",
                "AND t.subscriber = j.sub",
            )
        } else {
            ("", "")
        };
        let returned = column_list("t.", inbox);
        let update_resolve = |from: &str| {
            format!(
                "UPDATE {t} AS t SET \
                   status = j.status, \
                   retry_count = COALESCE(j.retry_count, t.retry_count), \
                   last_error = COALESCE(j.error, t.last_error), \
                   next_attempt_at = CASE WHEN j.status = 'PENDING' \
                     THEN {NOW} + j.delay * interval '1 second' ELSE t.next_attempt_at END, \
                   locked_by = NULL, locked_until = NULL, last_modified_at = {NOW}, \
                   completed_at = CASE WHEN j.status = 'COMPLETED' THEN {NOW} ELSE NULL END \
                 FROM {from} \
                 WHERE t.id = ANY($1::uuid[]) AND t.id = j.id {subscriber_join} \
                   AND {HELD} AND t.locked_by = $7::text"
            )
        };
        let attempts = crate::attempts::ctes(schema, &t, box_kind);
        BoxQueries {
            claim: claim(&t, same_subscriber, &returned, false, inbox),
            claim_tenant: claim(&t, same_subscriber, &returned, true, inbox),
            mode,
            resolve: match mode {
                CompletionMode::Update => {
                    update_resolve(&format!("UNNEST({OUTCOME_ARRAYS}) AS j({OUTCOME_FIELDS})"))
                }
                _ => completion::resolve(&t, inbox, mode, None),
            },
            resolve_failing: match mode {
                CompletionMode::Update => format!(
                    "WITH j AS (SELECT * FROM UNNEST({OUTCOME_ARRAYS}) AS j({OUTCOME_FIELDS})), \
                     {attempts} {}",
                    update_resolve("j")
                ),
                _ => completion::resolve(&t, inbox, mode, Some(&attempts)),
            },
            purge: completion::purge(&t, inbox),
            fail_stale: crate::staleness::fail_stale(&t, inbox, mode),
            archived: completion::archived_rows(&t, box_kind),
            complete: format!(
                "UPDATE {t} AS t SET status = 'COMPLETED', locked_by = NULL, locked_until = NULL, \
                   last_modified_at = {NOW}, completed_at = {NOW} \
                 WHERE t.id = $1::uuid AND {HELD} AND t.locked_by = $2::text {}",
                if inbox {
                    "AND t.subscriber = $3::text"
                } else {
                    "AND $3::text IS NULL"
                }
            ),
            renew: format!(
                "UPDATE {t} AS t SET locked_until = {NOW} + $2::float8 * interval '1 second' \
                 FROM (SELECT ctid FROM {t} WHERE status = 'PROCESSING' AND locked_by = $1::text \
                       FOR NO KEY UPDATE SKIP LOCKED) AS held \
                 WHERE t.ctid = held.ctid \
                 RETURNING t.id, {}",
                if inbox {
                    "t.subscriber"
                } else {
                    "NULL::text AS subscriber"
                }
            ),
            tenants: format!(
                "WITH RECURSIVE t AS ( \
                   (SELECT tenant_id FROM {t} WHERE status = 'PENDING' \
                    ORDER BY tenant_id LIMIT 1) \
                   UNION ALL \
                   SELECT (SELECT x.tenant_id FROM {t} x WHERE x.status = 'PENDING' \
                           AND x.tenant_id > t.tenant_id ORDER BY x.tenant_id LIMIT 1) \
                   FROM t WHERE t.tenant_id IS NOT NULL) \
                 SELECT tenant_id FROM t WHERE tenant_id IS NOT NULL LIMIT 10000"
            ),
            relay: relay(&t, schema, channel, box_kind, false, relay_modes),
            relay_tenant: relay(&t, schema, channel, box_kind, true, relay_modes),
            floor: format!("SELECT min(seq) FROM {t} WHERE status IN ('PENDING', 'PROCESSING')"),
            rows: format!(
                "SELECT {}, NULL::text AS taken_over_from FROM {t} ORDER BY seq{}",
                column_list("", inbox),
                if inbox { ", subscriber" } else { "" }
            ),
            insert: if inbox && mode != CompletionMode::Update {
                completion::insert_inbox(&t, channel, name)
            } else if inbox {
                insert_inbox(&t, channel, name)
            } else {
                insert_outbox(&t, channel, name)
            },
        }
    }
}

/// `UNNEST($first::type[], ...) WITH ORDINALITY AS u(names..., ord)` over the leading
/// columns, the message columns and the trailing ones; numbered from `$1`.
fn unnest(leading: &[(&str, &str)], trailing: &[(&str, &str)]) -> String {
    let all: Vec<&(&str, &str)> = leading
        .iter()
        .chain(MESSAGE_COLUMNS.iter())
        .chain(trailing.iter())
        .collect();
    let arrays: Vec<String> = all
        .iter()
        .enumerate()
        .map(|(i, (_, ty))| format!("${}::{ty}[]", i + 1))
        .collect();
    let names: Vec<&str> = all.iter().map(|(name, _)| *name).collect();
    format!(
        "UNNEST({}) WITH ORDINALITY AS u({}, ord)",
        arrays.join(", "),
        names.join(", ")
    )
}

/// The message columns as selected from `u`, JSON text cast to `jsonb`.
fn selected_message_columns() -> String {
    MESSAGE_COLUMNS
        .iter()
        .map(|(name, _)| match *name {
            "payload" | "headers" => format!("u.{name}::jsonb"),
            _ => format!("u.{name}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn message_column_names() -> String {
    MESSAGE_COLUMNS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A multi-row outbox insert that notifies `channel` with the table name if it wrote rows.
fn insert_outbox(t: &str, channel: &str, name: &str) -> String {
    format!(
        "WITH ins AS ( \
           INSERT INTO {t} (id, {columns}, status, retry_count, next_attempt_at, created_at, \
             last_modified_at) \
           SELECT u.id, {selected}, 'PENDING', 0, {NOW}, {NOW}, {NOW} \
           FROM {unnest} ORDER BY u.ord \
           RETURNING 1) \
         SELECT pg_notify('{channel}', '{name}') FROM (SELECT count(*) AS n FROM ins) AS x WHERE x.n > 0",
        columns = message_column_names(),
        selected = selected_message_columns(),
        unnest = unnest(&[("id", "uuid")], &[]),
    )
}

/// The message column names, their selection from `u`, and the `UNNEST` of an inbox insert.
pub(crate) fn inbox_insert_parts() -> (String, String, String) {
    (
        message_column_names(),
        selected_message_columns(),
        unnest(
            &[("id", "uuid"), ("subscriber", "text")],
            &[("deliveries", "int4")],
        ),
    )
}

/// A multi-row inbox insert with dedup: an existing `(id, subscriber)` only gets its
/// `delivery_count` raised by the row's deliveries. Notifies if it wrote rows.
fn insert_inbox(t: &str, channel: &str, name: &str) -> String {
    format!(
        "WITH ins AS ( \
           INSERT INTO {t} AS t (id, subscriber, {columns}, status, retry_count, next_attempt_at, \
             created_at, last_modified_at, received_at, delivery_count) \
           SELECT u.id, u.subscriber, {selected}, 'PENDING', 0, {NOW}, {NOW}, {NOW}, {NOW}, \
             u.deliveries \
           FROM {unnest} ORDER BY u.ord \
           ON CONFLICT (id, subscriber) DO UPDATE \
             SET delivery_count = t.delivery_count + EXCLUDED.delivery_count \
           RETURNING t.id, t.subscriber, t.delivery_count), \
         woken AS ( \
           SELECT pg_notify('{channel}', '{name}') FROM (SELECT count(*) AS n FROM ins) AS x \
           WHERE x.n > 0) \
         SELECT ins.id, ins.subscriber, ins.delivery_count FROM ins LEFT JOIN woken ON true",
        columns = message_column_names(),
        selected = selected_message_columns(),
        unnest = unnest(
            &[("id", "uuid"), ("subscriber", "text")],
            &[("deliveries", "int4")]
        ),
    )
}

/// One relay at a time per box and tenant (the seed's lock per box and tenant): the
/// statement first takes a transaction-scoped advisory lock, and a process that does not
/// get it relays nothing this round instead of walking the same head rows as the holder,
/// skipping its locks (with three processes that contention made every relay ≈ 1 s).
///
/// The whole in-process dispatch of a batch as one statement (one commit): the due outbox
/// rows are claimed as by `claim` (same filters), marked COMPLETED — or FAILED for a
/// command no route takes — and copied into the inbox once per subscriber with a matching subscription (one row even when the subscriber has an every-tenant and a tenant subscription for the type), with
/// dedup on `(id, subscriber)`, in `seq` order; the inbox's channel is notified. Returns
/// `(moved, inserted, duplicates, failed)`. With the outbox in `delete`/`archive` mode the
/// routed rows are deleted (and archived) instead of marked; with the inbox in one of those
/// modes the inbox rows go through its dedup ledger (see `completion`).
fn relay(
    t: &str,
    schema: &str,
    channel: &str,
    box_kind: BoxKind,
    by_tenant: bool,
    (outbox_mode, inbox_mode): (CompletionMode, CompletionMode),
) -> String {
    let inbox_name = box_kind.kind().inbox().table();
    let inbox = format!("\"{schema}\".{inbox_name}");
    let command = box_kind.kind() == bandeja_core::MessageKind::Command;
    let kind = bandeja_core::subscriptions::kind_name(box_kind.kind());
    // Untenanted, `$6` is NULL (and must appear in the statement for its type).
    let gate = format!(
        "{NO_FLUSH_WAIT} (SELECT pg_try_advisory_xact_lock(hashtext('bandeja relay'), \
           hashtext('{t}' || COALESCE($6::text, '')))) AND"
    );
    let due = due(t, "c.ctid AS row_id", &gate, "", "", by_tenant);
    let unrouted = "NOT EXISTS (SELECT 1 FROM routes r WHERE r.message_type = t.message_type \
         AND (r.tenant IS NULL OR r.tenant = COALESCE(t.target_tenant_id, t.tenant_id)))";
    let no_route_error = "'no handler for command type `' || t.message_type \
           || '` (target service `' || COALESCE(t.target_service, '?') \
           || '`): no process has ever registered a handler for it (no subscription in the \
           database): register one with `on_command` and retry the command, or fix the sender'";
    let (status, error) = if command {
        (
            format!("CASE WHEN {unrouted} THEN 'FAILED' ELSE 'COMPLETED' END"),
            format!("CASE WHEN {unrouted} THEN {no_route_error} ELSE t.last_error END"),
        )
    } else {
        ("'COMPLETED'".to_owned(), "t.last_error".to_owned())
    };
    let due_rows =
        "t.ctid = ANY(ARRAY(SELECT row_id FROM due)) AND $3::text IS NOT NULL AND $4::float8 >= 0";
    // The outbox side: `source` holds the COMPLETED rows the inbox rows are made from.
    let (outbox_ctes, source, source_filter, moved, failed) = if outbox_mode
        == CompletionMode::Update
    {
        (
            format!(
                "moved AS ( \
                   UPDATE {t} AS t SET \
                     status = {status}, last_error = {error}, \
                     locked_by = NULL, locked_until = NULL, last_modified_at = {NOW}, \
                     completed_at = CASE WHEN {status} = 'COMPLETED' THEN {NOW} ELSE NULL END \
                   WHERE {due_rows} \
                   RETURNING t.*)"
            ),
            "moved",
            "WHERE m.status = 'COMPLETED'",
            "(SELECT count(*) FROM moved)".to_owned(),
            "(SELECT count(*) FROM moved WHERE status = 'FAILED')",
        )
    } else {
        let routed = if command {
            format!("AND NOT {unrouted}")
        } else {
            String::new()
        };
        let mut ctes =
            format!("gone AS (DELETE FROM {t} AS t WHERE {due_rows} {routed} RETURNING t.*)");
        if let Some(archived) = completion::archive_cte(t, false, outbox_mode, "gone") {
            ctes.push_str(&format!(", {archived}"));
        }
        if command {
            ctes.push_str(&format!(
                ", kept AS ( \
                   UPDATE {t} AS t SET status = 'FAILED', last_error = {no_route_error}, \
                     locked_by = NULL, locked_until = NULL, last_modified_at = {NOW}, completed_at = NULL \
                   WHERE {due_rows} AND {unrouted} \
                   RETURNING t.id, t.retry_count, t.status, t.last_error)"
            ));
        }
        let (moved, failed) = if command {
            (
                "((SELECT count(*) FROM gone) + (SELECT count(*) FROM kept))".to_owned(),
                "(SELECT count(*) FROM kept)",
            )
        } else {
            ("(SELECT count(*) FROM gone)".to_owned(), "0::int8")
        };
        (ctes, "gone", "", moved, failed)
    };
    // A command no route takes is a failed attempt: recorded in the attempts history.
    let outbox_ctes = if command {
        let failed_rows = if outbox_mode == CompletionMode::Update {
            "moved WHERE status = 'FAILED'"
        } else {
            "kept"
        };
        format!(
            "{outbox_ctes}, failing AS ( \
               SELECT id, ''::text AS sub, retry_count, status, last_error AS error \
               FROM {failed_rows}), {}",
            crate::attempts::log_and_prune(schema, box_kind, "$3::text")
        )
    } else {
        outbox_ctes
    };
    let pairs = format!(
        "FROM {source} m JOIN routes r ON r.message_type = m.message_type \
           AND (r.tenant IS NULL OR r.tenant = COALESCE(m.target_tenant_id, m.tenant_id))"
    );
    // The inbox side: with a dedup ledger, only the pairs it recorded become rows.
    let (ledger, ledger_join, duplicates) = if inbox_mode == CompletionMode::Update {
        (
            String::new(),
            String::new(),
            "(SELECT count(*) FROM ins WHERE delivery_count > 1)".to_owned(),
        )
    } else {
        (
            format!(
                "led AS ( \
                   INSERT INTO {inbox}_dedup AS d (id, subscriber, received_at) \
                   SELECT DISTINCT m.id, r.subscriber, {NOW} {pairs} {source_filter} \
                   ON CONFLICT (id, subscriber) DO NOTHING \
                   RETURNING d.id, d.subscriber), "
            ),
            "JOIN led ON led.id = m.id AND led.subscriber = r.subscriber".to_owned(),
            format!(
                "((SELECT count(DISTINCT (m.id, r.subscriber)) {pairs} {source_filter}) - (SELECT count(*) FROM ins WHERE delivery_count = 1))"
            ),
        )
    };
    format!(
        "WITH routes AS ( \
           SELECT message_type, subscriber, NULLIF(tenant_id, '') AS tenant \
           FROM \"{schema}\".subscriptions WHERE kind = '{kind}'), \
         due AS ({due}), \
         {outbox_ctes}, \
         {ledger}ins AS ( \
           INSERT INTO {inbox} AS x (id, subscriber, tenant_id, message_type, schema_version, partition_key, \
             aggregate_type, aggregate_id, payload, headers, source_tenant_id, target_tenant_id, target_service, \
             occurred_at, status, retry_count, next_attempt_at, created_at, last_modified_at, received_at, \
             delivery_count) \
           SELECT DISTINCT ON (m.seq, r.subscriber) \
             m.id, r.subscriber, COALESCE(m.target_tenant_id, m.tenant_id), m.message_type, \
             m.schema_version, m.partition_key, m.aggregate_type, m.aggregate_id, m.payload, m.headers, \
             m.source_tenant_id, m.target_tenant_id, m.target_service, m.occurred_at, 'PENDING', 0, \
             {NOW}, {NOW}, {NOW}, {NOW}, 1 \
           {pairs} {ledger_join} \
           {source_filter} \
           ORDER BY m.seq, r.subscriber \
           ON CONFLICT (id, subscriber) DO UPDATE SET delivery_count = x.delivery_count + 1 \
           RETURNING x.delivery_count) \
         SELECT {moved} AS moved, \
                (SELECT array_agg(m.message_type ORDER BY m.seq) FROM {source} m {source_filter}) \
                  AS published_types, \
                (SELECT array_agg(extract(epoch FROM ({NOW} - m.created_at))::float8 ORDER BY m.seq) \
                  FROM {source} m {source_filter}) AS published_waits, \
                (SELECT count(*) FROM ins WHERE delivery_count = 1) AS inserted, \
                {duplicates} AS duplicates, \
                {failed} AS failed, \
                (SELECT count(*) FROM (SELECT pg_notify('{channel}', '{inbox_name}') \
                   WHERE EXISTS (SELECT 1 FROM ins)) AS n) AS notified"
    )
}

/// The leading condition of a claim's or a relay's scan: `synchronous_commit = off` for the
/// statement's own (implicit) transaction, so its commit does not wait for the WAL flush —
/// two of the three flushes off the way from an emitting commit to its handler. Safe
/// because what a claim or relay writes only matters through a later write that does wait,
/// and every such write (a handler's completion, an outcome, the mark after a broker
/// publish) is guarded by the claim's token (`locked_by`, `status = 'PROCESSING'`): a claim
/// lost in a server crash makes that write change nothing (the row is claimed again), and
/// PostgreSQL flushes the WAL in order, so a durable handler commit carries the claim
/// before it. A relay lost in a crash is lost whole (inbox rows and outbox marks together)
/// and runs again. What it does change: when the PostgreSQL server itself crashes, the
/// claims of its last moments (up to about three `wal_writer_delay`s, 600 ms by default)
/// can be lost, and their rows claimed again after the restart while the handler that held
/// them may still be in its non-database work (its database work cannot commit: its
/// connection died with the server). Set inside the statement, not as a connection option:
/// poolers such as PgBouncer refuse startup options, and a session `SET` would outlive the
/// statement on a pooled server connection. (An uncorrelated subquery: a one-time filter
/// evaluated before the scan, so before any row is written.)
const NO_FLUSH_WAIT: &str =
    "(SELECT set_config('synchronous_commit', 'off', true) IS NOT NULL) AND";

/// The claim statement: due rows found through the partial index in `seq` order, locked,
/// then updated by `ctid` (a TID scan: joining on `id` made the planner hash the whole
/// table, history included). The old status and holder are read from `due` to flag
/// takeovers (counted in `takeover_count`, not in `retry_count`). With
/// `by_tenant`, only PENDING rows of tenant `$6` (the pending-only tenant index). In an
/// inbox, only rows matching one of the (subscriber, type, tenant) triples of the next three
/// parameters (`$6..$8`, or `$7..$9` by tenant; a NULL type or tenant matches any; a NULL
/// array: any row).
fn claim(t: &str, same_subscriber: &str, returned: &str, by_tenant: bool, inbox: bool) -> String {
    let subscribers = if !inbox {
        String::new()
    } else {
        let (a, b, c) = if by_tenant { (7, 8, 9) } else { (6, 7, 8) };
        format!(
            "AND (${a}::text[] IS NULL OR EXISTS ( \
               SELECT 1 FROM UNNEST(${a}::text[], ${b}::text[], ${c}::text[]) \
                 AS k(subscriber, message_type, tenant) \
               WHERE k.subscriber = c.subscriber \
                 AND (k.message_type IS NULL OR k.message_type = c.message_type) \
                 AND (k.tenant IS NULL OR k.tenant = c.tenant_id)))"
        )
    };
    let due = due(
        t,
        "c.ctid AS row_id, c.seq, c.status, c.locked_by",
        NO_FLUSH_WAIT,
        same_subscriber,
        &subscribers,
        by_tenant,
    );
    format!(
        "WITH due AS ({due}), \
         claimed AS ( \
           UPDATE {t} AS t SET \
             takeover_count = t.takeover_count + CASE WHEN t.status = 'PROCESSING' THEN 1 ELSE 0 END, \
             last_error = CASE WHEN t.status = 'PROCESSING' \
               THEN 'lease of ' || COALESCE(t.locked_by, '?') || ' expired at ' \
                    || COALESCE(t.locked_until::text, '?') || ' before it finished; taken over' \
               ELSE t.last_error END, \
             status = 'PROCESSING', locked_by = $3::text, \
             locked_until = {NOW} + $4::float8 * interval '1 second', last_modified_at = {NOW} \
           WHERE t.ctid = ANY(ARRAY(SELECT row_id FROM due)) \
           RETURNING {returned}) \
         SELECT t.*, CASE WHEN due.status = 'PROCESSING' THEN COALESCE(due.locked_by, '?') END \
           AS taken_over_from \
         FROM claimed t JOIN due ON due.seq = t.seq"
    )
}

/// The due rows of a claim or a relay (`$1` ordered, `$2` limit, `$5` floor seq, `$6`
/// tenant with `by_tenant`): PENDING rows whose time has come and PROCESSING rows whose
/// lease expired, from the live floor on, in `seq` order, skipping a row whose partition
/// key has an older live row (per tenant and, in inboxes, per subscriber), locked with
/// `SKIP LOCKED`. `gate` is a leading condition ([`NO_FLUSH_WAIT`], and the relay's
/// advisory lock).
/// `same_subscriber` is the key check's subscriber condition, `subscribers` the claim's
/// own subscriber filter (inboxes).
fn due(
    t: &str,
    columns: &str,
    gate: &str,
    same_subscriber: &str,
    subscribers: &str,
    by_tenant: bool,
) -> String {
    let tenant_filter = if by_tenant {
        "AND c.tenant_id = $6::text AND c.status = 'PENDING'"
    } else {
        ""
    };
    format!(
        "SELECT {columns} FROM {t} c \
         WHERE {gate} c.status IN ('PENDING', 'PROCESSING') \
           AND c.seq >= COALESCE($5::int8, 0) {tenant_filter} {subscribers} \
           AND ((c.status = 'PENDING' AND c.next_attempt_at <= {NOW}) \
             OR (c.status = 'PROCESSING' AND c.locked_until < {NOW})) \
           AND (NOT $1::bool OR c.partition_key IS NULL OR NOT EXISTS ( \
                SELECT 1 FROM {t} o WHERE o.partition_key = c.partition_key AND o.tenant_id = c.tenant_id {same_subscriber} \
                AND o.seq < c.seq AND {KEY_CHECK_LIVE})) \
         ORDER BY c.seq LIMIT $2::int8 \
         FOR UPDATE OF c SKIP LOCKED"
    )
}
