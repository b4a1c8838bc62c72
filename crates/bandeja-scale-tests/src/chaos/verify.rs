//! The end of a chaos run: what the database says, and whether it keeps the contract.
//! Every emitted message reached both subscribers exactly once in effect (one `effects`
//! row per tick and subscriber, no `violations` row); every outbox row is COMPLETED; every
//! inbox row is COMPLETED, or FAILED with the poison reason for a poison message; there is
//! no other row.

use std::collections::BTreeMap;

use sqlx::PgPool;

use crate::{Poison, Tick, POISON_REASON, SUBSCRIBERS};
use bandeja::Payload;

/// Counts read from the database at the end of a run, and the broken rules.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Verification {
    /// Outbox rows per `<message type> <status>`.
    pub outbox: BTreeMap<String, i64>,
    /// Inbox rows per `<message type> <status>`.
    pub inbox: BTreeMap<String, i64>,
    /// Effect rows (handled ticks, one per subscriber).
    pub effects: i64,
    /// Second applications the handlers detected.
    pub violations: i64,
    /// (outbox message, subscriber) pairs without an inbox row.
    pub missing_inbox_rows: i64,
    /// Inbox rows of no emitted message or of an unknown subscriber.
    pub stray_inbox_rows: i64,
    /// Tick inbox rows without their effect row.
    pub missing_effects: i64,
    /// Effect rows of no tick inbox row (a poison message applied, or a stray).
    pub stray_effects: i64,
    /// Poison inbox rows not FAILED with the poison reason.
    pub poison_not_failed_with_reason: i64,
    /// Deliveries absorbed by the inbox's dedup (`delivery_count - 1`, summed).
    pub duplicates_absorbed: i64,
    /// Failed attempts retried (`retry_count`, summed over the inbox).
    pub retries: i64,
    /// Every broken rule, in words; empty when the contract held.
    pub failures: Vec<String>,
}

/// A count of `sql` (which uses `{s}` for the quoted schema).
async fn count(pool: &PgPool, schema: &str, sql: &str) -> Result<i64, sqlx::Error> {
    let sql = sql.replace("{s}", &format!("\"{schema}\""));
    sqlx::query_scalar::<_, Option<i64>>(&sql)
        .fetch_one(pool)
        .await
        .map(Option::unwrap_or_default)
}

/// Rows per `<message type> <status>` of `table`.
async fn by_type_and_status(
    pool: &PgPool,
    schema: &str,
    table: &str,
) -> Result<BTreeMap<String, i64>, sqlx::Error> {
    let sql = format!(
        "SELECT message_type || ' ' || status, count(*) FROM \"{schema}\".{table} GROUP BY 1"
    );
    Ok(sqlx::query_as::<_, (String, i64)>(&sql)
        .fetch_all(pool)
        .await?
        .into_iter()
        .collect())
}

/// Reads the end state of `schema` and checks it against `committed` emitted messages, of
/// which `poison` are poison.
pub(crate) async fn verify(
    pool: &PgPool,
    schema: &str,
    committed: u64,
    poison: u64,
) -> Result<Verification, sqlx::Error> {
    let subscribers = SUBSCRIBERS
        .iter()
        .map(|s| format!("('{s}')"))
        .collect::<Vec<_>>()
        .join(", ");
    let (tick, poison_type) = (Tick::TYPE, Poison::TYPE);
    let mut v = Verification {
        outbox: by_type_and_status(pool, schema, "outbox_events").await?,
        inbox: by_type_and_status(pool, schema, "inbox_events").await?,
        effects: count(pool, schema, "SELECT count(*) FROM {s}.effects").await?,
        violations: count(pool, schema, "SELECT count(*) FROM {s}.violations").await?,
        missing_inbox_rows: count(
            pool,
            schema,
            &format!(
                "SELECT count(*) FROM {{s}}.outbox_events o CROSS JOIN (VALUES {subscribers}) v(sub) \
                 WHERE NOT EXISTS (SELECT 1 FROM {{s}}.inbox_events i \
                                   WHERE i.id = o.id AND i.subscriber = v.sub)"
            ),
        )
        .await?,
        stray_inbox_rows: count(
            pool,
            schema,
            &format!(
                "SELECT count(*) FROM {{s}}.inbox_events i \
                 WHERE i.subscriber NOT IN (SELECT sub FROM (VALUES {subscribers}) v(sub)) \
                    OR NOT EXISTS (SELECT 1 FROM {{s}}.outbox_events o WHERE o.id = i.id)"
            ),
        )
        .await?,
        missing_effects: count(
            pool,
            schema,
            &format!(
                "SELECT count(*) FROM {{s}}.inbox_events i WHERE i.message_type = '{tick}' \
                 AND NOT EXISTS (SELECT 1 FROM {{s}}.effects e \
                                 WHERE e.message_id = i.id AND e.subscriber = i.subscriber)"
            ),
        )
        .await?,
        stray_effects: count(
            pool,
            schema,
            &format!(
                "SELECT count(*) FROM {{s}}.effects e WHERE NOT EXISTS \
                 (SELECT 1 FROM {{s}}.inbox_events i WHERE i.id = e.message_id \
                  AND i.subscriber = e.subscriber AND i.message_type = '{tick}')"
            ),
        )
        .await?,
        poison_not_failed_with_reason: count(
            pool,
            schema,
            &format!(
                "SELECT count(*) FROM {{s}}.inbox_events WHERE message_type = '{poison_type}' \
                 AND NOT (status = 'FAILED' AND last_error LIKE '%{POISON_REASON}%')"
            ),
        )
        .await?,
        duplicates_absorbed: count(
            pool,
            schema,
            "SELECT sum(delivery_count - 1)::bigint FROM {s}.inbox_events",
        )
        .await?,
        retries: count(
            pool,
            schema,
            "SELECT sum(retry_count)::bigint FROM {s}.inbox_events",
        )
        .await?,
        failures: Vec::new(),
    };
    v.failures = broken_rules(&v, committed, poison);
    Ok(v)
}

/// The rules `v` breaks, given what was emitted.
fn broken_rules(v: &Verification, committed: u64, poison: u64) -> Vec<String> {
    let subscribers = SUBSCRIBERS.len() as u64;
    let ticks = committed - poison;
    let mut failures = Vec::new();
    let mut expect = |what: &str, found: i64, wanted: u64| {
        if u64::try_from(found).ok() != Some(wanted) {
            failures.push(format!("{what}: {found}, expected {wanted}"));
        }
    };
    let get = |map: &BTreeMap<String, i64>, key: String| map.get(&key).copied().unwrap_or(0);
    let (tick, poison_type) = (Tick::TYPE, Poison::TYPE);
    expect(
        "completed outbox ticks",
        get(&v.outbox, format!("{tick} COMPLETED")),
        ticks,
    );
    expect(
        "completed outbox poison messages",
        get(&v.outbox, format!("{poison_type} COMPLETED")),
        poison,
    );
    expect("outbox rows in all", v.outbox.values().sum(), committed);
    expect(
        "completed inbox ticks",
        get(&v.inbox, format!("{tick} COMPLETED")),
        ticks * subscribers,
    );
    expect(
        "failed inbox poison messages",
        get(&v.inbox, format!("{poison_type} FAILED")),
        poison * subscribers,
    );
    expect(
        "inbox rows in all",
        v.inbox.values().sum(),
        committed * subscribers,
    );
    expect("effects", v.effects, ticks * subscribers);
    expect("violations (second applications)", v.violations, 0);
    expect("missing inbox rows", v.missing_inbox_rows, 0);
    expect("stray inbox rows", v.stray_inbox_rows, 0);
    expect("ticks without their effect", v.missing_effects, 0);
    expect("effects of no tick", v.stray_effects, 0);
    expect(
        "poison rows not FAILED with their reason",
        v.poison_not_failed_with_reason,
        0,
    );
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(committed: u64, poison: u64) -> Verification {
        let ticks = i64::try_from(committed - poison).unwrap();
        let poison = i64::try_from(poison).unwrap();
        Verification {
            outbox: BTreeMap::from([
                (format!("{} COMPLETED", Tick::TYPE), ticks),
                (format!("{} COMPLETED", Poison::TYPE), poison),
            ]),
            inbox: BTreeMap::from([
                (format!("{} COMPLETED", Tick::TYPE), ticks * 2),
                (format!("{} FAILED", Poison::TYPE), poison * 2),
            ]),
            effects: ticks * 2,
            ..Verification::default()
        }
    }

    #[test]
    fn a_clean_end_breaks_no_rule() {
        assert_eq!(broken_rules(&clean(100, 2), 100, 2), Vec::<String>::new());
    }

    #[test]
    fn a_lost_or_doubled_message_is_named() {
        let mut lost = clean(100, 2);
        lost.inbox.insert(format!("{} PENDING", Tick::TYPE), 1);
        lost.effects -= 1;
        let failures = broken_rules(&lost, 100, 2);
        assert!(
            failures.iter().any(|f| f.starts_with("inbox rows in all")),
            "{failures:?}"
        );
        assert!(
            failures.iter().any(|f| f.starts_with("effects")),
            "{failures:?}"
        );
        let mut doubled = clean(100, 2);
        doubled.violations = 1;
        assert_eq!(
            broken_rules(&doubled, 100, 2),
            vec!["violations (second applications): 1, expected 0".to_owned()]
        );
    }
}
