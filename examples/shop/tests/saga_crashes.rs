//! `kill -9` in the middle of the order saga, with real processes over NATS JetStream:
//! `order` (the orchestrator), `billing`, `inventory` and `shipping`, each with its own
//! SQLite database, every step taking 300 ms (`SHOP_STEP_DELAY`) and recording each run in
//! a log outside its transaction (`SHOP_RUN_LOG`).
//!
//! Six orders are placed (four of a keyboard in stock, two of a headset that is not); the
//! orchestrator is SIGKILLed while the first charges are running and restarted on its
//! database; then inventory is SIGKILLed in the middle of a reservation and restarted.
//! Every saga ends (4 COMPLETED, 2 COMPENSATED), every charge, reservation, shipment and
//! refund is applied exactly once (counted from the rows the handlers wrote in their
//! transactions), and the run log shows that the killed reservation ran again.
//! Uses the local NATS server (`NATS_URL`, default `nats://127.0.0.1:4222`).

mod common;

use std::path::Path;
use std::time::Duration;

use sqlx::SqlitePool;

use common::{
    get_order, open_sqlite, order_id, place_order, rows_for_order, stock, wait_for, Shop, TempDir,
};

/// Long enough for a redelivery after NATS's ack wait (30 s) if a kill caught a message
/// between its delivery and its storage.
const WAIT: Duration = Duration::from_secs(90);

/// The run log's lines: (module, step, phase, order, saga id).
fn runs(log: &Path) -> Vec<(String, String, String, i64, String)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (module, step, phase) = (words.next()?, words.next()?, words.next()?);
            let order = words.next()?.strip_prefix("order=")?.parse().ok()?;
            let saga = words.next()?.strip_prefix("saga=")?;
            Some((module.into(), step.into(), phase.into(), order, saga.into()))
        })
        .collect()
}

/// Whether `ledger` has recorded `key` (the step's transaction committed).
async fn recorded(db: &SqlitePool, ledger: &str, key: &str) -> bool {
    let n: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {ledger} WHERE saga_key = ?"))
        .bind(key)
        .fetch_one(db)
        .await
        .expect("read the ledger");
    n == 1
}

/// `(order_id, count)` of `table`'s rows, by order.
async fn per_order(db: &SqlitePool, table: &str) -> Vec<(i64, i64)> {
    sqlx::query_as(&format!(
        "SELECT order_id, count(*) FROM {table} GROUP BY order_id ORDER BY order_id"
    ))
    .fetch_all(db)
    .await
    .expect("count rows by order")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_orchestrator_and_step_service_resume_and_apply_each_step_once() {
    let nats = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
    let dir = TempDir::new("saga-crashes");
    let prefix = format!("shop{}", uuid::Uuid::new_v4().simple());
    let run_log = dir.path().join("runs.log");
    let run_log_text = run_log.display().to_string();
    let url = |service: &str| dir.sqlite_url(&format!("{service}.db"));
    let start = |service: &str| {
        Shop::start(
            &url(service),
            &[
                ("SHOP_SERVICE", service),
                ("SHOP_NATS_URL", &nats),
                ("SHOP_BROKER_PREFIX", &prefix),
                ("SHOP_STEP_DELAY", "300ms"),
                ("SHOP_RUN_LOG", &run_log_text),
                // A killed process's claims expire soon, so its restart takes them over.
                ("BANDEJA_COMMANDS_INBOX_LOCK_AT_LEAST_FOR", "1s"),
                ("BANDEJA_COMMANDS_INBOX_LOCK_AT_MOST_FOR", "3s"),
                ("BANDEJA_COMMANDS_OUTBOX_LOCK_AT_LEAST_FOR", "1s"),
                ("BANDEJA_COMMANDS_OUTBOX_LOCK_AT_MOST_FOR", "3s"),
            ],
            &dir.path().join(format!("{service}.log")),
        )
    };
    let _billing = start("billing");
    let mut inventory = start("inventory");
    let _shipping = start("shipping");
    let mut order = start("order");
    let client = reqwest::Client::new();
    let billing_db = open_sqlite(&url("billing")).await;
    let inventory_db = open_sqlite(&url("inventory")).await;
    let shipping_db = open_sqlite(&url("shipping")).await;
    let order_db = open_sqlite(&url("order")).await;

    let keyboards = stock(&client, &inventory, "KB-001").await;
    let mut orders = Vec::new();
    for n in 0..6 {
        let sku = if n % 3 == 2 { "HD-001" } else { "KB-001" };
        let placed = place_order(&client, &order, "alice", &[(sku, 1)]).await;
        orders.push((order_id(&placed), sku));
    }

    // 1. kill -9 the orchestrator while the first charges run, restart it on its database.
    wait_for("a charge running", WAIT, || async {
        runs(&run_log)
            .iter()
            .any(|(module, ..)| module == "billing")
            .then_some(())
    })
    .await;
    order.kill();
    let running: i64 = sqlx::query_scalar("SELECT count(*) FROM sagas WHERE status = 'RUNNING'")
        .fetch_one(&order_db)
        .await
        .expect("count the running sagas");
    assert_eq!(running, 6, "the orchestrator was killed mid-saga");
    let order = start("order");

    // 2. kill -9 inventory in the middle of a reservation (its run logged, its
    // transaction not committed), restart it on its database.
    let (cut_order, cut_key) =
        wait_for("a reservation in the middle of its step", WAIT, || async {
            for (module, step, phase, order_id, saga) in runs(&run_log) {
                let key = format!("{saga}:{step}:{phase}");
                if module == "inventory" && !recorded(&inventory_db, "inventory_steps", &key).await
                {
                    return Some((order_id, key));
                }
            }
            None
        })
        .await;
    inventory.kill();
    assert!(
        !recorded(&inventory_db, "inventory_steps", &cut_key).await,
        "the reservation of order {cut_order} was cut before its commit"
    );
    let inventory = start("inventory");

    // Every saga ends: the keyboards COMPLETED, the headsets COMPENSATED.
    for &(id, sku) in &orders {
        let expected = if sku == "KB-001" {
            "COMPLETED"
        } else {
            "COMPENSATED"
        };
        let ended = wait_for(&format!("order {id} to end"), WAIT, || async {
            let order = get_order(&client, &order, id).await;
            let status = order["status"].as_str().unwrap_or_default().to_owned();
            ["COMPLETED", "COMPENSATED", "FAILED"]
                .contains(&status.as_str())
                .then_some(status)
        })
        .await;
        assert_eq!(ended, expected, "order {id} ({sku})");
    }
    let statuses: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, count(*) FROM sagas GROUP BY status ORDER BY status")
            .fetch_all(&order_db)
            .await
            .expect("count the sagas");
    assert_eq!(
        statuses,
        [("COMPENSATED".to_owned(), 2), ("COMPLETED".to_owned(), 4)]
    );

    // Each step and compensation applied exactly once, in its service's database.
    let once = |ids: &[i64]| ids.iter().map(|&id| (id, 1)).collect::<Vec<_>>();
    let all: Vec<i64> = orders.iter().map(|o| o.0).collect();
    let kept: Vec<i64> = orders
        .iter()
        .filter(|o| o.1 == "KB-001")
        .map(|o| o.0)
        .collect();
    let short: Vec<i64> = orders
        .iter()
        .filter(|o| o.1 == "HD-001")
        .map(|o| o.0)
        .collect();
    assert_eq!(per_order(&billing_db, "charges").await, once(&all));
    assert_eq!(per_order(&billing_db, "refunds").await, once(&short));
    assert_eq!(
        per_order(&inventory_db, "stock_movements").await,
        once(&kept)
    );
    assert_eq!(per_order(&shipping_db, "shipments").await, once(&kept));
    assert_eq!(stock(&client, &inventory, "KB-001").await, keyboards - 4);
    assert_eq!(stock(&client, &inventory, "HD-001").await, 0);
    for id in &short {
        assert_eq!(
            rows_for_order(&inventory_db, "stock_movements", *id).await,
            0
        );
    }

    // The killed reservation ran again after the restart (and was applied once, above).
    let cut_runs = runs(&run_log)
        .iter()
        .filter(|(module, step, phase, _, saga)| {
            module == "inventory" && format!("{saga}:{step}:{phase}") == cut_key
        })
        .count();
    assert!(
        cut_runs >= 2,
        "the reservation of order {cut_order} cut by the kill ran {cut_runs} time(s)"
    );
    // Every step's run is in the log.
    let logged = runs(&run_log);
    for (module, step, phase, ids) in [
        ("billing", "charge", "forward", &all),
        ("inventory", "reserve", "forward", &all),
        ("shipping", "ship", "forward", &kept),
        ("billing", "charge", "compensation", &short),
    ] {
        for id in ids {
            assert!(
                logged
                    .iter()
                    .any(|(m, s, p, o, _)| m == module && s == step && p == phase && o == id),
                "no run of {module} {step} {phase} for order {id}"
            );
        }
    }
    eprintln!(
        "{} step runs logged; the reservation of order {cut_order} cut by the kill ran {cut_runs} times",
        logged.len()
    );
}
