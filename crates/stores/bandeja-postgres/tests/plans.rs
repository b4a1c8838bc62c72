//! The plans PostgreSQL picks for a claim when its statistics are wrong: a box analyzed when
//! it looked finished (every row COMPLETED) that then receives a burst. The per-key order
//! check must probe the key's index, never walk the box's live rows by `seq`, and the
//! claim's own walk must not go through the key's index. With the two partial indexes on
//! the same predicate (before migration 0011), such statistics made the planner walk every
//! older live row for each candidate: claims of 3-14 s, and drains of 200,000 with three
//! processes that stalled for minutes.

mod common;

use std::time::Duration;

use bandeja_conformance::fixtures::receive_events;
use bandeja_core::store::ClaimRequest;
use bandeja_core::{BoxKind, Event, MessageKind, MessageRecord, Store, TenantId};
use bandeja_postgres::testing::explain_claim;
use bandeja_postgres::PgStore;
use common::try_fresh_store;

/// Events over `keys` partition keys, round-robin, as a burst lands.
fn burst(messages: u64, keys: u64) -> Vec<MessageRecord> {
    (0..messages)
        .map(|n| {
            let mut record = MessageRecord::from_event(&Event::new(
                "Ping",
                format!("k{}", n % keys),
                bandeja_conformance::fixtures::Ping { n },
            ))
            .expect("valid event");
            record.tenant_id = TenantId::default_tenant();
            record
        })
        .collect()
}

/// Emits `records` into the outbox and receives them into the inbox, as a burst lands on
/// both boxes.
async fn emit_and_receive(store: &PgStore, records: &[MessageRecord], subscribers: &[String]) {
    receive_events(store, records, subscribers).await;
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(&mut *tx, MessageKind::Event, records)
        .await
        .expect("emit the burst");
    store.commit(tx).await.expect("commit");
}

fn ordered_claim(limit: usize) -> ClaimRequest<'static> {
    ClaimRequest {
        worker_id: "plans",
        limit,
        lease: Duration::from_secs(30),
        ordered: true,
        from_seq: Some(1),
        tenant: None,
        subscribers: None,
    }
}

/// The lines of `plan` that scan `table` as `alias` (the key check's `o`, the claim's `c`).
fn scans<'p>(plan: &'p str, table: &str, alias: &str) -> Vec<&'p str> {
    let on = format!(" on {table} {alias} ");
    let on_end = format!(" on {table} {alias}");
    plan.lines()
        .filter(|line| line.contains(&on) || line.trim_end().ends_with(&on_end))
        .collect()
}

/// The key check (alias `o`) probes `<table>_key_check` and never scans `<table>_live`; the
/// claim's walk (alias `c`) never takes the key check's index. (A bitmap scan shows its
/// index on a line of its own, without the alias: hence the plan-wide check of the index.)
fn assert_key_check_probes_the_key_index(plan: &str, table: &str) {
    let key_index = format!("{table}_key_check ");
    let live_index = format!("{table}_live ");
    assert!(
        !scans(plan, table, "o").is_empty(),
        "no key check in the plan:\n{plan}"
    );
    assert!(
        plan.contains(&key_index),
        "the key check must probe {key_index}:\n{plan}"
    );
    for line in scans(plan, table, "o") {
        assert!(
            !line.contains(&live_index),
            "the key check must not walk {live_index}:\n{plan}"
        );
    }
    for line in scans(plan, table, "c") {
        assert!(
            !line.contains(&key_index),
            "the claim's walk must not go through {key_index}:\n{plan}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_on_a_box_analyzed_when_it_looked_finished_is_claimed_through_the_key_index() {
    let Some((store, _guard)) = try_fresh_store().await else {
        return;
    };
    let schema = store.schema().to_owned();
    let subscribers = ["billing".to_owned()];
    // A box that looks finished to the planner: its rows COMPLETED when it was analyzed.
    emit_and_receive(&store, &burst(5_000, 50), &subscribers).await;
    for table in ["inbox_events", "outbox_events"] {
        // Only this test's analyses: autovacuum must not mend the statistics under it.
        sqlx::query(&format!(
            "ALTER TABLE \"{schema}\".{table} SET (autovacuum_enabled = false)"
        ))
        .execute(store.pool())
        .await
        .expect("keep autovacuum off the box");
        sqlx::query(&format!(
            "UPDATE \"{schema}\".{table} SET status = 'COMPLETED', completed_at = now()"
        ))
        .execute(store.pool())
        .await
        .expect("finish the box");
        sqlx::query(&format!("ANALYZE \"{schema}\".{table}"))
            .execute(store.pool())
            .await
            .expect("analyze the finished box");
    }
    // Then a burst lands.
    emit_and_receive(&store, &burst(20_000, 50), &subscribers).await;

    for (box_kind, table) in [
        (BoxKind::InboxEvents, "inbox_events"),
        (BoxKind::OutboxEvents, "outbox_events"),
    ] {
        let plan = explain_claim(&store, box_kind, &ordered_claim(256))
            .await
            .expect("plan the claim");
        assert_key_check_probes_the_key_index(&plan, table);
    }

    // And the claim takes what the order allows: the heads of the 50 keys, one each.
    let claimed = store
        .claim(BoxKind::InboxEvents, &ordered_claim(256))
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 50, "one head per key");
}
