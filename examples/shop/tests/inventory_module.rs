//! The inventory module alone, in the `Scenario` style of Spring Modulith's
//! `@ApplicationModuleTest`: no order module, no HTTP. A one-step saga sends its
//! reservation as the order saga would; the test waits for the state change: the units
//! are taken (all lines), a shortage is refused naming the sku and takes nothing, and a
//! second send of a done reservation (same step key) does nothing again.

use std::time::Duration;

use bandeja::saga::{SagaId, SagaStatus};
use bandeja::sagas::Saga;
use bandeja::sqlite::SqliteStore;
use bandeja::testing::eventually;
use bandeja::{Bandeja, Command, SagaStore, Store};
use serde::{Deserialize, Serialize};

use shop::inventory::{
    self, ReleaseHandler, ReleaseStock, ReserveHandler, ReserveStock, StockLine,
};
use shop::steps::StepRuns;

/// The test saga's data.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Reservation {
    order_id: i64,
    lines: Vec<StockLine>,
}

fn line(sku: &str, quantity: i64) -> StockLine {
    StockLine {
        sku: sku.to_owned(),
        quantity,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_takes_every_line_once_and_a_shortage_is_refused(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("shop-inventory-module-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    let store =
        SqliteStore::connect(&format!("sqlite://{}", dir.join("shop.db").display())).await?;
    store.migrate().await?;
    shop::db::migrate(&store).await?;
    let saga = Saga::<Reservation>::define("reservation")
        .step("reserve", |r: &Reservation| {
            let reserve = ReserveStock {
                order_id: r.order_id,
                lines: r.lines.clone(),
            };
            Command::to_self("inventory", reserve)
        })
        .compensate_with(|r: &Reservation| {
            let release = ReleaseStock {
                order_id: r.order_id,
                lines: r.lines.clone(),
            };
            Command::to_self("inventory", release)
        })
        .build()?;
    let bandeja = Bandeja::builder(store.clone())
        .config(shop::config::shop_defaults(Duration::ZERO, Duration::ZERO))
        .on_command::<ReserveStock, _>(
            inventory::RESERVE_SUBSCRIBER,
            ReserveHandler::new(StepRuns::default()),
        )
        .on_command::<ReleaseStock, _>(
            inventory::RELEASE_SUBSCRIBER,
            ReleaseHandler::new(StepRuns::default()),
        )
        .saga(&saga)
        .build()?;
    let running = bandeja.start().await?;
    let stock_of = |sku: &'static str| {
        let store = store.clone();
        async move { inventory::stock_of(&store, sku).await.ok().flatten() }
    };
    let run = |order_id: i64, lines: Vec<StockLine>| {
        let (store, bandeja, saga) = (store.clone(), bandeja.clone(), saga.clone());
        async move {
            let mut tx = store.begin().await.expect("begin");
            let id: SagaId = bandeja
                .start_saga(&mut tx, &saga, &Reservation { order_id, lines })
                .await
                .expect("start the saga");
            store.commit(tx).await.expect("commit");
            eventually(Duration::from_secs(20), || async {
                let state = store.saga(id).await.ok()??;
                state.status.is_final().then_some(state)
            })
            .await
            .expect("the saga ends")
        }
    };
    let movements = |order_id: i64| {
        let store = store.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM stock_movements WHERE order_id = ?")
                .bind(order_id)
                .fetch_one(store.pool())
                .await
                .expect("count the movements")
        }
    };

    let (mice, keyboards) = (stock_of("MS-001").await, stock_of("KB-001").await);
    let done = run(42, vec![line("MS-001", 3), line("KB-001", 2)]).await;
    assert_eq!(done.status, SagaStatus::Completed);
    assert_eq!(stock_of("MS-001").await, mice.map(|n| n - 3));
    assert_eq!(stock_of("KB-001").await, keyboards.map(|n| n - 2));
    assert_eq!(movements(42).await, 2, "one movement per line");

    // All or none: KB-001 has 8 left, so nothing is taken, MS-001 included.
    let short = run(43, vec![line("MS-001", 1), line("KB-001", 9)]).await;
    assert_eq!(short.status, SagaStatus::Compensated);
    let reason = short.reason.unwrap_or_default();
    assert!(
        reason.contains("KB-001 (requested 9, available 8)"),
        "{reason}"
    );
    assert_eq!(stock_of("MS-001").await, mice.map(|n| n - 3));
    assert_eq!(movements(43).await, 0);

    // A second send of the done reservation (a new message, the same step key) does
    // nothing again: same stock, same movements, one ledger row sent twice.
    let key = format!("{}:reserve:forward", done.id);
    let mut again = bandeja::tenant::sync_scope(bandeja::TenantId::default_tenant(), || {
        Command::to_self(
            "inventory",
            ReserveStock {
                order_id: 42,
                lines: vec![line("MS-001", 3), line("KB-001", 2)],
            },
        )
    })?;
    again.headers.extra.insert(
        bandeja::saga::headers::IDEMPOTENCY_KEY.to_owned(),
        key.clone(),
    );
    again.headers.extra.insert(
        bandeja::saga::headers::SAGA_ID.to_owned(),
        done.id.to_string(),
    );
    again.headers.extra.insert(
        bandeja::saga::headers::REPLY_TO.to_owned(),
        done.reply_to.clone(),
    );
    let mut tx = store.begin().await?;
    bandeja.outbox().send(&mut *tx, &again).await?;
    store.commit(tx).await?;
    let sends = eventually(Duration::from_secs(20), || async {
        let sends: i64 = sqlx::query_scalar("SELECT sends FROM inventory_steps WHERE saga_key = ?")
            .bind(&key)
            .fetch_one(store.pool())
            .await
            .ok()?;
        (sends == 2).then_some(sends)
    })
    .await?;
    assert_eq!(sends, 2);
    assert_eq!(stock_of("MS-001").await, mice.map(|n| n - 3));
    assert_eq!(movements(42).await, 2);

    running.shutdown().await;
    store.pool().close().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
