//! The application's own writes stay quick while the workers drain a large backlog on the
//! embedded default (SQLite's one writer shared by the shop and bandeja's workers): orders
//! placed over HTTP during the drain of 100,000 confirmed orders are answered within 50 ms
//! at the 99th percentile, and the drain goes on meanwhile.

mod common;

use std::time::{Duration, Instant};

use bandeja::sqlite::SqliteStore;
use bandeja::{Bandeja, Event, MessageRecord};
use chrono::Utc;
use common::{count_rows, open_sqlite, order_body, post_order, wait_for, Shop, TempDir};
use shop::money::Money;
use shop::order::OrderConfirmed;

/// Confirmed orders waiting in the outbox when the shop starts.
const BACKLOG: u64 = 100_000;

/// Orders placed over HTTP while the shop drains them.
const ORDERS: usize = 200;

/// The bound on the 99th percentile of `POST /orders`.
const P99_BOUND: Duration = Duration::from_millis(50);

/// `OrderConfirmed` events of orders that do not exist, without lines (inventory has nothing
/// to take; notification records one email each): `BACKLOG` of them, 1,000 per transaction.
async fn emit_backlog(database_url: &str) {
    let store = SqliteStore::connect(database_url)
        .await
        .expect("open the shop database");
    let outbox = Bandeja::builder(store.clone())
        .build()
        .expect("an emitting-only bandeja")
        .outbox();
    let mut n = 0;
    while n < BACKLOG {
        let end = (n + 1000).min(BACKLOG);
        let records = (n..end)
            .map(|i| {
                let order_id = 1_000_000 + i64::try_from(i).expect("a small number");
                let event = Event::new(
                    "Order",
                    order_id.to_string(),
                    OrderConfirmed {
                        order_id,
                        customer: "backlog".to_owned(),
                        lines: Vec::new(),
                        total: Money::from_cents(0),
                        currency: "EUR".to_owned(),
                        confirmed_at: Utc::now(),
                    },
                );
                MessageRecord::from_event(&event).expect("encode the event")
            })
            .collect::<Vec<_>>();
        let mut tx = store.pool().begin().await.expect("begin");
        outbox
            .emit_records(&mut *tx, records)
            .await
            .expect("emit the backlog");
        tx.commit().await.expect("commit the backlog");
        n = end;
    }
    store.pool().close().await;
}

/// Confirmed orders whose email is recorded.
async fn handled(pool: &sqlx::SqlitePool) -> i64 {
    count_rows(pool, "sent_emails").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_placed_while_a_backlog_drains_are_answered_within_50_ms_at_p99() {
    let dir = TempDir::new("orders-during-drain");
    let url = dir.sqlite_url("shop.db");
    let log = dir.path().join("shop.log");
    // A first start creates the tables and the catalog; the backlog is emitted while the
    // shop is down, so its workers meet all of it at once when it starts again.
    let mut first = Shop::start(&url, &[], &log);
    first.kill();
    emit_backlog(&url).await;

    let shop = Shop::start(&url, &[("BANDEJA_LOG", "warn")], &log);
    let pool = open_sqlite(&url).await;
    let client = reqwest::Client::new();
    let before = wait_for("the drain to start", Duration::from_secs(60), || async {
        let n = handled(&pool).await;
        (n > 0).then_some(n)
    })
    .await;

    let body = order_body("alice", &[("MS-001", 1)]);
    let mut took = Vec::with_capacity(ORDERS);
    for _ in 0..ORDERS {
        let started = Instant::now();
        let response = post_order(&client, &shop, &body).await;
        took.push(started.elapsed());
        assert_eq!(response.status(), 201, "POST /orders during the drain");
    }
    let after = handled(&pool).await;
    let left: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM outbox_events WHERE status IN ('PENDING', 'PROCESSING')",
    )
    .fetch_one(&pool)
    .await
    .expect("count the live outbox rows");
    let inbox_left: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM inbox_events WHERE status IN ('PENDING', 'PROCESSING')",
    )
    .fetch_one(&pool)
    .await
    .expect("count the live inbox rows");

    took.sort_unstable();
    let p50 = took[ORDERS / 2];
    let p99 = took[(ORDERS - 1) * 99 / 100];
    eprintln!(
        "{ORDERS} orders during the drain: p50 {p50:?}, p99 {p99:?}, max {:?}; \
         {} backlog orders handled meanwhile, {left} outbox and {inbox_left} inbox rows still live",
        took[ORDERS - 1],
        after - before
    );
    assert!(
        after > before && left + inbox_left > 0,
        "the orders must be placed while the backlog drains: handled {before} → {after}, \
         {left} outbox and {inbox_left} inbox rows live at the end"
    );
    assert!(
        p99 <= P99_BOUND,
        "POST /orders took {p99:?} at p99 (p50 {p50:?}) during the drain; the bound is {P99_BOUND:?}"
    );
    assert_eq!(
        count_rows(&pool, "orders").await,
        i64::try_from(ORDERS).expect("a small number"),
        "every order placed is stored"
    );
}
