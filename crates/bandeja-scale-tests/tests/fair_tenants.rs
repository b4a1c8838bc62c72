//! Tenant A has a 50,000-event backlog; tenant B emits 100 events afterwards. Workers claim
//! per tenant in rotation, so B's events complete long before A's backlog is drained
//! (contract point 8). The measured bound is printed: how long B took, and how much of A
//! was still waiting then.

mod common;

use std::time::{Duration, Instant};

use bandeja::store::Inspect;
use bandeja::{Bandeja, BoxKind, Event, MessageRecord, MessageStatus, Store, TenantId};
use bandeja_scale_tests::{worker_config, EffectWriter, Tick, SUBSCRIBERS};
use common::try_fresh;

const BACKLOG: u64 = 50_000;
const LATE: u64 = 100;

async fn emit(store: &bandeja::postgres::PgStore, tenant: &TenantId, range: std::ops::Range<u64>) {
    let outbox = store.outbox();
    let all: Vec<u64> = range.collect();
    for chunk in all.chunks(2_000) {
        let records: Vec<MessageRecord> = chunk
            .iter()
            .map(|n| {
                let event = Event::new("Tick", format!("key-{}", n % 500), Tick { n: *n })
                    .with_tenant(tenant.clone());
                MessageRecord::from_event(&event).expect("record")
            })
            .collect();
        let mut tx = store.begin().await.expect("begin");
        outbox.emit_records(&mut tx, records).await.expect("emit");
        store.commit(tx).await.expect("commit");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_backlog_does_not_delay_another_tenant() {
    let Some(fresh) = try_fresh().await else {
        return;
    };
    let store = fresh.store.clone();
    let (a, b) = (
        TenantId::new("tenant-a").expect("t"),
        TenantId::new("tenant-b").expect("t"),
    );
    emit(&store, &a, 0..BACKLOG).await;

    let mut builder =
        Bandeja::builder(store.clone()).config(worker_config(Duration::from_secs(10)));
    for subscriber in SUBSCRIBERS {
        builder = builder.on_event::<Tick, _>(subscriber, EffectWriter::new(&store, "fair", 0.0));
    }
    let running = builder
        .build()
        .expect("build")
        .start()
        .await
        .expect("start");
    emit(&store, &b, 1_000_000..1_000_000 + LATE).await;
    let started = Instant::now();

    let b_rows = usize::try_from(LATE).expect("fits") * SUBSCRIBERS.len();
    let (b_took, a_done, a_total) =
        bandeja::testing::eventually(Duration::from_secs(120), || async {
            let rows = store.rows(BoxKind::InboxEvents).await.expect("rows");
            let done = |t: &TenantId| {
                rows.iter()
                    .filter(|r| {
                        r.message.record.tenant_id == *t
                            && r.message.status == MessageStatus::Completed
                    })
                    .count()
            };
            (done(&b) == b_rows).then(|| {
                (
                    started.elapsed(),
                    done(&a),
                    usize::try_from(BACKLOG).unwrap_or(usize::MAX) * SUBSCRIBERS.len(),
                )
            })
        })
        .await
        .expect("tenant B's events complete");
    running.shutdown().await;

    eprintln!(
        "fair tenants: B's {LATE} events ({b_rows} handlings) done in {b_took:?}; \
         A had {a_done} of {a_total} handlings done then ({:.1}%)",
        100.0 * a_done as f64 / a_total as f64
    );
    assert!(
        a_done * 2 < a_total,
        "B should finish before half of A's backlog: A had {a_done} of {a_total} done"
    );
}
