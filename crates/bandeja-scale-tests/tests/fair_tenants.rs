//! Tenant isolation under a backlog (contract point 8; issue 6, item 8). Tenant A has a
//! 100,000-event backlog; tenant B emits 100 events once the workers run. Workers claim per
//! tenant in rotation, so B's events complete within a few polling intervals (the default
//! `events.inbox` interval, 2 s, three times over) while almost all of A's backlog still
//! waits; and a subscriber registered for tenant A alone never sees one of B's events.
//! The measured times are printed: how long B took, and how much of A was done then.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bandeja::postgres::PgStore;
use bandeja::{
    Bandeja, Config, Event, EventHandler, HandlerContext, HandlerError, MessageRecord, Store,
    TenantId,
};
use bandeja_conformance::fixtures::outbox_of;
use bandeja_scale_tests::{worker_config, EffectWriter, Tick, SUBSCRIBERS};
use common::try_fresh;

const BACKLOG: u64 = 100_000;
const LATE: u64 = 100;
/// The subscriber registered for tenant A only.
const A_ONLY: &str = "a-only";

/// Counts the events it sees, and those of another tenant than its own.
#[derive(Clone)]
struct TenantWatch {
    tenant: TenantId,
    seen: Arc<AtomicU64>,
    foreign: Arc<AtomicU64>,
}

impl EventHandler<PgStore, Tick> for TenantWatch {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, PgStore>,
        event: Event<Tick>,
    ) -> Result<(), HandlerError> {
        self.seen.fetch_add(1, Ordering::Relaxed);
        if event.tenant_id != self.tenant {
            self.foreign.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

async fn emit(store: &PgStore, tenant: &TenantId, range: std::ops::Range<u64>) {
    let outbox = outbox_of(store);
    let all: Vec<u64> = range.collect();
    for chunk in all.chunks(5_000) {
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
    let emitting = Instant::now();
    emit(&store, &a, 0..BACKLOG).await;
    eprintln!(
        "fair tenants: A's backlog of {BACKLOG} emitted in {:?}",
        emitting.elapsed()
    );

    let watch = TenantWatch {
        tenant: a.clone(),
        seen: Arc::default(),
        foreign: Arc::default(),
    };
    let mut builder =
        Bandeja::builder(store.clone()).config(worker_config(Duration::from_secs(10)));
    for subscriber in SUBSCRIBERS {
        builder = builder.on_event::<Tick, _>(subscriber, EffectWriter::new(&store, "fair", 0.0));
    }
    let running = builder
        .on_event_for_tenant::<Tick, _>(A_ONLY, a.clone(), watch.clone())
        .build()
        .expect("build")
        .start()
        .await
        .expect("start");
    emit(&store, &b, 1_000_000..1_000_000 + LATE).await;
    let started = Instant::now();

    let subscribers = i64::try_from(SUBSCRIBERS.len()).expect("fits");
    let b_rows = i64::try_from(LATE).expect("fits") * subscribers;
    let completed = fresh
        .sql("SELECT count(*) FROM {s}.inbox_events WHERE tenant_id = $1 AND status = 'COMPLETED'");
    let count_done = |tenant: &TenantId| {
        let (sql, tenant) = (completed.clone(), tenant.to_string());
        let pool = store.pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>(&sql)
                .bind(tenant)
                .fetch_one(&pool)
                .await
                .expect("count")
        }
    };
    let b_took = bandeja::testing::eventually(Duration::from_secs(120), || async {
        (count_done(&b).await == b_rows).then(|| started.elapsed())
    })
    .await
    .expect("tenant B's events complete");
    let a_done = count_done(&a).await;
    let a_total = i64::try_from(BACKLOG).expect("fits") * (subscribers + 1);
    let b_rows_of_a_only: i64 = fresh
        .scalar(&format!(
            "SELECT count(*) FROM {{s}}.inbox_events WHERE subscriber = '{A_ONLY}' AND tenant_id <> 'tenant-a'"
        ))
        .await;
    running.shutdown().await;

    let polling = Config::default().events_inbox.polling_interval;
    eprintln!(
        "fair tenants: B's {LATE} events ({b_rows} handlings) done in {b_took:?}; \
         A had {a_done} of {a_total} handlings done then ({:.1}%); `{A_ONLY}` saw {} events, \
         {} of another tenant",
        100.0 * a_done as f64 / a_total as f64,
        watch.seen.load(Ordering::Relaxed),
        watch.foreign.load(Ordering::Relaxed),
    );
    assert!(
        b_took <= polling * 3,
        "B's events took {b_took:?}, more than three polling intervals ({polling:?} each)"
    );
    assert!(
        a_done * 10 < a_total,
        "B should finish before a tenth of A's backlog: A had {a_done} of {a_total} done"
    );
    assert_eq!(
        watch.foreign.load(Ordering::Relaxed),
        0,
        "a handler of tenant A saw another tenant's events"
    );
    assert_eq!(b_rows_of_a_only, 0, "`{A_ONLY}` got inbox rows of tenant B");
    assert!(
        watch.seen.load(Ordering::Relaxed) > 0,
        "`{A_ONLY}` handled none of A's events"
    );
}
