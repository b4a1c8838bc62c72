//! What a handler does to its transaction is charged to that handler alone, on the batched
//! path (one transaction per chunk, a savepoint per handler): a handler that swallows a
//! failed statement (the "already done" idiom: a caught unique violation, which aborts a
//! PostgreSQL transaction), one that commits or rolls back the transaction itself, and one
//! whose work fails only at `COMMIT` (a deferred constraint). In each case the healthy
//! messages of the chunk complete within seconds with their work applied exactly once, and
//! the guilty message is retried with backoff (or FAILED at once when its own work may have
//! committed — it ended the transaction itself — so that work is never applied twice), runs
//! at most `max-retries + 1` times (counted outside its transaction) and ends FAILED with a
//! `last_error` saying what to fix.
//!
//! Also: a chunk never mixes tenants, so a tenant context a handler sets with
//! `set_config(…, true)` (`SET LOCAL`, as row-level security needs) never reaches another
//! tenant's handler.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_conformance::fixtures::outbox_of;
use bandeja_conformance::fixtures::receive_events;
use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;
use bandeja_core::{
    Bandeja, BoxKind, Event, EventHandler, HandlerContext, HandlerError, HandlerTransaction,
    MessageRecord, MessageStatus, Store, TenantId,
};
use bandeja_postgres::PgStore;
use common::try_fresh_store;

/// What the guilty handler does.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Catches a unique violation and returns `Ok`.
    SwallowsAUniqueViolation,
    /// Runs `COMMIT` on the handler's connection.
    CommitsItself,
    /// Runs `ROLLBACK` on the handler's connection.
    RollsBackItself,
    /// Writes a row that breaks a deferred constraint: the chunk's `COMMIT` fails.
    BreaksADeferredConstraint,
}

/// The guilty message's payload number: in the middle of the chunk, so messages are
/// handled before it and after it in the same transaction.
const GUILTY: u64 = 10;

/// Counts every run (outside the transaction) and writes one effect row per message.
#[derive(Clone)]
struct Faulty {
    fault: Fault,
    schema: String,
    runs: Arc<Mutex<BTreeMap<u64, u32>>>,
}

impl Faulty {
    fn runs_of(&self, n: u64) -> u32 {
        self.runs
            .lock()
            .map(|r| r.get(&n).copied().unwrap_or_default())
            .unwrap_or_default()
    }
}

fn boxed(e: sqlx::Error) -> HandlerError {
    HandlerError::from(Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
}

impl EventHandler<PgStore, Ping> for Faulty {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, PgStore>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        let n = event.payload.n;
        if let Ok(mut runs) = self.runs.lock() {
            *runs.entry(n).or_default() += 1;
        }
        let schema = &self.schema;
        // The guilty message's own work may have committed (it committed itself): its
        // retries must not fail on it.
        let effect = if n == GUILTY {
            format!("INSERT INTO \"{schema}\".effects (n) VALUES ($1) ON CONFLICT DO NOTHING")
        } else {
            format!("INSERT INTO \"{schema}\".effects (n) VALUES ($1)")
        };
        sqlx::query(&effect)
            .bind(i64::try_from(n).unwrap_or_default())
            .execute(ctx.conn())
            .await
            .map_err(boxed)?;
        if n != GUILTY {
            return Ok(());
        }
        match self.fault {
            Fault::SwallowsAUniqueViolation => {
                // "Already done": the row exists, the violation is caught and ignored.
                let again =
                    sqlx::query(&format!("INSERT INTO \"{schema}\".effects (n) VALUES (-1)"))
                        .execute(ctx.conn())
                        .await;
                assert!(again.is_err(), "-1 exists: the insert violates the key");
            }
            Fault::CommitsItself => {
                sqlx::query("COMMIT")
                    .execute(ctx.conn())
                    .await
                    .map_err(boxed)?;
            }
            Fault::RollsBackItself => {
                sqlx::query("ROLLBACK")
                    .execute(ctx.conn())
                    .await
                    .map_err(boxed)?;
            }
            Fault::BreaksADeferredConstraint => {
                sqlx::query(&format!("INSERT INTO \"{schema}\".deferred (n) VALUES (7)"))
                    .execute(ctx.conn())
                    .await
                    .map_err(boxed)?;
            }
        }
        Ok(())
    }
}

async fn prepare(store: &PgStore) {
    let schema = store.schema();
    for statement in [
        format!("CREATE TABLE \"{schema}\".effects (n int8 PRIMARY KEY)"),
        format!("INSERT INTO \"{schema}\".effects (n) VALUES (-1)"),
        format!("CREATE TABLE \"{schema}\".deferred (n int8 UNIQUE DEFERRABLE INITIALLY DEFERRED)"),
        format!("INSERT INTO \"{schema}\".deferred (n) VALUES (7)"),
    ] {
        sqlx::query(&statement)
            .execute(store.pool())
            .await
            .expect("prepare the test tables");
    }
}

async fn effects(store: &PgStore) -> Vec<i64> {
    sqlx::query_scalar(&format!(
        "SELECT n FROM \"{}\".effects WHERE n >= 0 ORDER BY n",
        store.schema()
    ))
    .fetch_all(store.pool())
    .await
    .expect("effects")
}

async fn emit(store: &PgStore, range: std::ops::Range<u64>, tenant: Option<&TenantId>) {
    let outbox = outbox_of(store);
    let mut tx = store.begin().await.expect("begin");
    for n in range {
        let mut event = Event::new("Ping", format!("k{n}"), Ping { n });
        if let Some(tenant) = tenant {
            event = event.with_tenant(tenant.clone());
        }
        outbox.emit(&mut tx, &event).await.expect("emit");
    }
    store.commit(tx).await.expect("commit");
}

async fn charged_to_the_guilty_handler_alone(fault: Fault, says: &[&str]) {
    let Some((store, _guard)) = try_fresh_store().await else {
        return;
    };
    prepare(&store).await;
    let handler = Faulty {
        fault,
        schema: store.schema().to_owned(),
        runs: Arc::default(),
    };
    let mut config = fast_config();
    let max_retries = 2;
    config.events_inbox.max_retries = max_retries;
    config.events_inbox.retry_backoff_initial = Duration::from_millis(200);
    config.events_inbox.retry_backoff_max = Duration::from_millis(200);
    // Every message of the claim in one batched transaction.
    config.events_inbox.handler_transaction = HandlerTransaction::Batch;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", handler.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let started = std::time::Instant::now();
    emit(&store, 0..20, None).await;
    let healthy: Vec<i64> = (0..20).filter(|n| *n != 10).collect();
    eventually(Duration::from_secs(20), || async {
        let rows = store.rows(BoxKind::InboxEvents).await.ok()?;
        rows.iter()
            .filter(|r| r.message.status == MessageStatus::Completed)
            .count()
            .eq(&19)
            .then_some(())
    })
    .await
    .unwrap_or_else(|_| panic!("{fault:?}: the 19 healthy messages completed"));
    let healthy_took = started.elapsed();
    let rows = eventually(Duration::from_secs(20), || async {
        let rows = store.rows(BoxKind::InboxEvents).await.ok()?;
        rows.iter()
            .any(|r| r.message.status == MessageStatus::Failed)
            .then_some(rows)
    })
    .await
    .unwrap_or_else(|_| panic!("{fault:?}: the guilty message ended FAILED"));
    running.shutdown().await;
    assert!(
        healthy_took < Duration::from_secs(5),
        "{fault:?}: the healthy messages took {healthy_took:?}"
    );
    let guilty = rows
        .iter()
        .find(|r| r.message.status == MessageStatus::Failed)
        .expect("the FAILED row");
    let error = guilty.message.last_error.clone().unwrap_or_default();
    assert!(
        guilty.message.retry_count <= max_retries,
        "{fault:?}: retry count {}: {error}",
        guilty.message.retry_count
    );
    for word in says {
        assert!(
            error.contains(word),
            "{fault:?}: last_error should say `{word}`: {error}"
        );
    }
    assert!(
        handler.runs_of(GUILTY) <= max_retries + 1,
        "{fault:?}: the guilty handler ran {} times",
        handler.runs_of(GUILTY)
    );
    let mut applied = effects(&store).await;
    applied.retain(|n| *n != 10);
    assert_eq!(
        applied, healthy,
        "{fault:?}: each healthy message's work applied exactly once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_swallows_a_sql_error_is_charged_alone() {
    charged_to_the_guilty_handler_alone(
        Fault::SwallowsAUniqueViolation,
        &["savepoint", "ON CONFLICT"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_commits_the_transaction_itself_is_charged_alone() {
    charged_to_the_guilty_handler_alone(Fault::CommitsItself, &["never commit or roll back"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_rolls_back_the_transaction_itself_is_charged_alone() {
    charged_to_the_guilty_handler_alone(Fault::RollsBackItself, &["never commit or roll back"])
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_fails_on_a_deferred_constraint_is_charged_to_its_handler() {
    charged_to_the_guilty_handler_alone(Fault::BreaksADeferredConstraint, &["commit"]).await;
}

/// Records the tenant context each handler found, then sets its own with
/// `set_config('app.tenant', …, true)` (transaction-local, as `SET LOCAL`).
#[derive(Clone, Default)]
struct TenantContext {
    found: Arc<Mutex<Vec<(String, String)>>>,
}

impl EventHandler<PgStore, Ping> for TenantContext {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, PgStore>,
        _event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        let tenant = ctx.tenant().as_str().to_owned();
        let before: Option<String> =
            sqlx::query_scalar("SELECT current_setting('app.tenant', true)")
                .fetch_one(ctx.conn())
                .await
                .map_err(boxed)?;
        sqlx::query("SELECT set_config('app.tenant', $1, true)")
            .bind(&tenant)
            .execute(ctx.conn())
            .await
            .map_err(boxed)?;
        if let Ok(mut found) = self.found.lock() {
            found.push((tenant, before.unwrap_or_default()));
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_never_mixes_tenants_so_a_local_setting_never_leaks() {
    let Some((store, _guard)) = try_fresh_store().await else {
        return;
    };
    let handler = TenantContext::default();
    let mut config = fast_config();
    config.events_inbox.handler_transaction = HandlerTransaction::Batch;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", handler.clone())
        .build()
        .expect("build");
    let (a, b) = (
        TenantId::new("tenant-a").expect("tenant"),
        TenantId::new("tenant-b").expect("tenant"),
    );
    // Interleaved tenants, received into the inbox before the worker starts: claimed
    // together, in one cycle.
    let records: Vec<MessageRecord> = (0..40u64)
        .map(|n| {
            let tenant = if n % 2 == 0 { &a } else { &b };
            let event = Event::new("Ping", format!("k{n}"), Ping { n }).with_tenant(tenant.clone());
            MessageRecord::from_event(&event).expect("record")
        })
        .collect();
    let subscribers = vec!["s".to_owned()];
    receive_events(&store, records.iter(), &subscribers).await;
    let running = bandeja.start().await.expect("start");
    eventually(Duration::from_secs(20), || async {
        let rows = store.rows(BoxKind::InboxEvents).await.ok()?;
        (rows.len() == 40
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed))
        .then_some(())
    })
    .await
    .expect("every message handled");
    running.shutdown().await;
    let found = handler.found.lock().expect("found").clone();
    assert_eq!(found.len(), 40);
    let leaks: Vec<_> = found
        .iter()
        .filter(|(tenant, before)| !before.is_empty() && before != tenant)
        .collect();
    assert!(
        leaks.is_empty(),
        "a handler found another tenant's context: {leaks:?}"
    );
    assert!(
        found.iter().any(|(_, before)| !before.is_empty()),
        "the handlers did share batched transactions (within a tenant)"
    );
}
