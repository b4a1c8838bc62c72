//! `LISTEN`/`NOTIFY` wake-ups across stores: committed work notifies, rolled-back work does
//! not, other schemas are not disturbed, and the relay survives losing its connection.

mod common;

use std::time::Duration;

use bandeja_core::store::{Delivery, Inspect};
use bandeja_core::{BoxKind, Event, MessageKind, MessageRecord, Store, TenantId};
use bandeja_postgres::PgStore;
use common::{database_url, try_fresh_store};
use tokio::sync::watch;

const WAIT: Duration = Duration::from_secs(5);
/// How long a wake-up that must not come is waited for.
const QUIET: Duration = Duration::from_millis(700);

fn ping(n: u64) -> MessageRecord {
    let mut record = MessageRecord::from_event(&Event::new(
        "Ping",
        format!("k{n}"),
        bandeja_conformance::fixtures::Ping { n },
    ))
    .expect("valid event");
    record.tenant_id = TenantId::default_tenant();
    record
}

/// A second store on the same schema: another process, as far as notifications go.
async fn second_store(schema: &str) -> PgStore {
    PgStore::connect_with_schema(&database_url(), schema)
        .await
        .expect("connect a second store")
}

async fn emit(store: &PgStore, records: &[MessageRecord], commit: bool) {
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(&mut *tx, MessageKind::Event, records)
        .await
        .expect("insert");
    if commit {
        store.commit(tx).await.expect("commit");
    }
}

fn subscribe(store: &PgStore, box_kind: BoxKind) -> watch::Receiver<u64> {
    let mut rx = store.wakers().subscribe(box_kind);
    rx.borrow_and_update();
    rx
}

async fn woken(rx: &mut watch::Receiver<u64>, within: Duration) -> bool {
    matches!(tokio::time::timeout(within, rx.changed()).await, Ok(Ok(())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_emission_in_another_store_wakes_this_one() {
    let Some((store, guard)) = try_fresh_store().await else {
        return;
    };
    let other = second_store(guard.schema()).await;
    let mut rx = subscribe(&store, BoxKind::OutboxEvents);
    let mut inbox_rx = subscribe(&store, BoxKind::InboxEvents);
    emit(&other, &[ping(1), ping(2)], true).await;
    assert!(woken(&mut rx, WAIT).await, "NOTIFY reached the other store");
    assert!(
        !woken(&mut inbox_rx, QUIET).await,
        "only the box that got rows is woken"
    );
    assert_eq!(
        store.rows(BoxKind::OutboxEvents).await.expect("rows").len(),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolled_back_emission_does_not_notify() {
    let Some((store, guard)) = try_fresh_store().await else {
        return;
    };
    let other = second_store(guard.schema()).await;
    let mut rx = subscribe(&store, BoxKind::OutboxEvents);
    emit(&other, &[ping(1)], false).await;
    assert!(!woken(&mut rx, QUIET).await, "a rollback sends nothing");
    emit(&other, &[ping(2)], true).await;
    assert!(
        woken(&mut rx, WAIT).await,
        "the relay was listening all along"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_insert_in_another_store_wakes_the_inbox_worker() {
    let Some((store, guard)) = try_fresh_store().await else {
        return;
    };
    let other = second_store(guard.schema()).await;
    let mut rx = subscribe(&store, BoxKind::InboxCommands);
    let mut local = subscribe(&other, BoxKind::InboxCommands);
    let record = ping(1);
    let subscribers = ["billing".to_owned()];
    let report = other
        .receive(
            MessageKind::Command,
            &[Delivery {
                record: &record,
                subscribers: &subscribers,
            }],
        )
        .await
        .expect("receive");
    assert_eq!(report.inserted, 1);
    assert!(
        woken(&mut local, WAIT).await,
        "the receiving store wakes at once"
    );
    assert!(woken(&mut rx, WAIT).await, "NOTIFY reached the other store");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_in_other_schemas_are_not_woken() {
    let Some((store, _guard)) = try_fresh_store().await else {
        return;
    };
    let Some((elsewhere, _other_guard)) = try_fresh_store().await else {
        return;
    };
    assert_ne!(store.channel(), elsewhere.channel());
    let mut rx = subscribe(&store, BoxKind::OutboxEvents);
    let mut other_rx = subscribe(&elsewhere, BoxKind::OutboxEvents);
    emit(&elsewhere, &[ping(1)], true).await;
    assert!(woken(&mut other_rx, WAIT).await);
    assert!(
        !woken(&mut rx, QUIET).await,
        "another schema's commit is not ours"
    );
    assert!(store
        .rows(BoxKind::OutboxEvents)
        .await
        .expect("rows")
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_survives_losing_its_connection() {
    let Some((store, guard)) = try_fresh_store().await else {
        return;
    };
    let other = second_store(guard.schema()).await;
    let mut rx = subscribe(&store, BoxKind::OutboxEvents);
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1 AND pid <> pg_backend_pid()",
    )
    .bind(format!("LISTEN \"{}\"", store.channel()))
    .fetch_all(store.pool())
    .await
    .expect("terminate the listeners");
    assert_eq!(killed, [true, true], "both stores' relays were listening");
    assert!(
        woken(&mut rx, WAIT).await,
        "after reconnecting, the relay wakes every box (notifications may have been missed)"
    );
    emit(&other, &[ping(1)], true).await;
    assert!(woken(&mut rx, WAIT).await, "listening again");
}
