//! The billing module alone: its two step handlers, sent the order saga's commands by
//! hand (with the saga's headers), as a saga's re-sends and late arrivals would reach
//! them. A second send of a done charge (same step key) charges nothing more; a refund
//! is a row of its own beside the charge, which stays; a refund that arrives before its
//! charge leaves a tombstone, and the late charge is refused.

use std::time::Duration;

use bandeja::saga::{headers, SagaId};
use bandeja::sqlite::SqliteStore;
use bandeja::testing::eventually;
use bandeja::{Bandeja, Command, Outbox, Payload, Store, TenantId};
use sqlx::SqlitePool;

use shop::billing::{self, ChargeHandler, ChargePayment, RefundHandler, RefundPayment};
use shop::money::Money;
use shop::steps::StepRuns;

/// `payload` as the order saga sends it: step `charge` of saga `saga`, `phase`.
fn step<T: Payload>(saga: SagaId, phase: &str, payload: T) -> Command<T> {
    let mut command = bandeja::tenant::sync_scope(TenantId::default_tenant(), || {
        Command::to_self("shop-billing", payload)
    })
    .expect("a command");
    let extra = &mut command.headers.extra;
    extra.insert(headers::SAGA_ID.to_owned(), saga.to_string());
    extra.insert(headers::REPLY_TO.to_owned(), "local".to_owned());
    extra.insert(headers::STEP.to_owned(), "charge".to_owned());
    extra.insert(headers::PHASE.to_owned(), phase.to_owned());
    extra.insert(
        headers::IDEMPOTENCY_KEY.to_owned(),
        format!("{saga}:charge:{phase}"),
    );
    command
}

/// How many sends of `key` billing has handled (its ledger's `sends`), once it is `n`.
async fn handled(pool: &SqlitePool, key: String, n: i64) -> i64 {
    eventually(Duration::from_secs(20), || async {
        let sends: i64 = sqlx::query_scalar("SELECT sends FROM billing_steps WHERE saga_key = ?")
            .bind(&key)
            .fetch_one(pool)
            .await
            .ok()?;
        (sends == n).then_some(sends)
    })
    .await
    .unwrap_or_else(|e| panic!("billing handling {key} {n} time(s): {e}"))
}

/// Sends `command` through the outbox, in a transaction of its own.
async fn send_command<T: Payload>(
    store: &SqliteStore,
    outbox: &Outbox<SqliteStore>,
    command: Command<T>,
) {
    let mut tx = store.begin().await.expect("begin");
    outbox.send(&mut *tx, &command).await.expect("send");
    store.commit(tx).await.expect("commit");
}

async fn count(pool: &SqlitePool, sql: &str, saga: SagaId) -> i64 {
    sqlx::query_scalar(sql)
        .bind(saga.to_string())
        .fetch_one(pool)
        .await
        .expect("count rows")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charges_are_idempotent_refunds_are_rows_and_a_late_charge_after_its_refund_is_refused(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("shop-billing-module-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    let store =
        SqliteStore::connect(&format!("sqlite://{}", dir.join("shop.db").display())).await?;
    store.migrate().await?;
    shop::db::migrate(&store).await?;
    let bandeja = Bandeja::builder(store.clone())
        .config(shop::config::shop_defaults(Duration::ZERO, Duration::ZERO))
        .on_command::<ChargePayment, _>(
            billing::CHARGE_SUBSCRIBER,
            ChargeHandler::new(StepRuns::default()),
        )
        .on_command::<RefundPayment, _>(
            billing::REFUND_SUBSCRIBER,
            RefundHandler::new(StepRuns::default()),
        )
        .build()?;
    let running = bandeja.start().await?;
    let outbox = bandeja.outbox();
    let send = |command| send_command(&store, &outbox, command);
    let send_refund = |command| send_command(&store, &outbox, command);
    let pool = store.pool();
    let charge = |order_id| ChargePayment {
        order_id,
        customer: "alice".into(),
        amount: Money::from_cents(8990),
    };
    let charges = "SELECT count(*) FROM charges WHERE saga_id = ?";
    let refunds = "SELECT count(*) FROM refunds WHERE saga_id = ?";

    // A charge, sent twice (the second send has a new message id, the same step key).
    let paid = SagaId::new();
    send(step(paid, "forward", charge(1))).await;
    handled(pool, format!("{paid}:charge:forward"), 1).await;
    send(step(paid, "forward", charge(1))).await;
    handled(pool, format!("{paid}:charge:forward"), 2).await;
    assert_eq!(count(pool, charges, paid).await, 1, "charged once");

    // Its refund: a row of its own, of the charge's amount; the charge row stays.
    let refund = RefundPayment {
        order_id: 1,
        charge_id: None,
    };
    send_refund(step(paid, "compensation", refund.clone())).await;
    handled(pool, format!("{paid}:charge:compensation"), 1).await;
    assert_eq!(count(pool, charges, paid).await, 1, "the charge stays");
    let (charge_id, amount): (i64, i64) =
        sqlx::query_as("SELECT charge_id, amount_cents FROM refunds WHERE saga_id = ?")
            .bind(paid.to_string())
            .fetch_one(pool)
            .await?;
    let charged: i64 = sqlx::query_scalar("SELECT id FROM charges WHERE saga_id = ?")
        .bind(paid.to_string())
        .fetch_one(pool)
        .await?;
    assert_eq!((charge_id, amount), (charged, 8990));

    // A refund that arrives first (its charge timed out and is still on its way): nothing
    // to pay back, a tombstone; the late charge is refused and charges nothing.
    let late = SagaId::new();
    send_refund(step(late, "compensation", refund)).await;
    handled(pool, format!("{late}:charge:compensation"), 1).await;
    send(step(late, "forward", charge(2))).await;
    handled(pool, format!("{late}:charge:forward"), 1).await;
    assert_eq!(
        count(pool, charges, late).await,
        0,
        "no charge after its refund"
    );
    assert_eq!(count(pool, refunds, late).await, 0, "nothing was paid back");
    let (ok, reason): (i64, String) =
        sqlx::query_as("SELECT ok, reason FROM billing_steps WHERE saga_key = ?")
            .bind(format!("{late}:charge:forward"))
            .fetch_one(pool)
            .await?;
    assert_eq!(ok, 0, "the late charge was refused");
    assert!(reason.contains("refunded before"), "{reason}");

    running.shutdown().await;
    store.pool().close().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
