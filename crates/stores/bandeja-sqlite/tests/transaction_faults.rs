//! What a handler does to its transaction is charged to that handler alone, on SQLite's
//! batched path (one transaction per chunk, a savepoint per handler; the default for a
//! subscriber measured fast): a handler that commits or rolls back the chunk's transaction
//! itself. The healthy messages of the chunk complete with their work applied exactly once
//! — after a `COMMIT` by the guilty handler, the work of those handled before it in the
//! chunk is in, and the transaction mark says so, so they are not run again — and the
//! guilty message runs at most `max-retries + 1` times (counted outside its transaction);
//! after a `COMMIT` it ends FAILED saying what to fix.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_conformance::fixtures::{fast_config, outbox_of, sqlite_temp, Ping, TempDir};
use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;
use bandeja_core::{
    Bandeja, BoxKind, Event, EventHandler, HandlerContext, HandlerError, HandlerTransaction,
    MessageStatus, Store,
};
use bandeja_sqlite::SqliteStore;

/// What the guilty handler does.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Runs `COMMIT` on the handler's connection.
    CommitsItself,
    /// Runs `ROLLBACK` on the handler's connection.
    RollsBackItself,
}

/// The guilty message: in the middle of the chunk.
const GUILTY: u64 = 10;

/// Counts every run (outside the transaction) and writes one effect row per message (the
/// primary key refuses a second one: work applied twice fails that message).
#[derive(Clone)]
struct Faulty {
    fault: Fault,
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

impl EventHandler<SqliteStore, Ping> for Faulty {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, SqliteStore>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        let n = event.payload.n;
        if let Ok(mut runs) = self.runs.lock() {
            *runs.entry(n).or_default() += 1;
        }
        // The guilty message's own work may have committed: its retries must not fail on it.
        let effect = if n == GUILTY {
            "INSERT INTO effects (n) VALUES (?1) ON CONFLICT DO NOTHING"
        } else {
            "INSERT INTO effects (n) VALUES (?1)"
        };
        sqlx::query(effect)
            .bind(i64::try_from(n).unwrap_or_default())
            .execute(ctx.conn())
            .await
            .map_err(boxed)?;
        if n == GUILTY {
            let end = match self.fault {
                Fault::CommitsItself => "COMMIT",
                Fault::RollsBackItself => "ROLLBACK",
            };
            sqlx::query(end).execute(ctx.conn()).await.map_err(boxed)?;
        }
        Ok(())
    }
}

async fn fresh_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-sqlite-faults", SqliteStore::connect).await
}

async fn charged_to_the_guilty_handler_alone(fault: Fault) {
    let (store, _dir) = fresh_store().await;
    sqlx::query("CREATE TABLE effects (n INTEGER PRIMARY KEY)")
        .execute(store.pool())
        .await
        .expect("create the effects table");
    let handler = Faulty {
        fault,
        runs: Arc::default(),
    };
    let mut config = fast_config();
    let max_retries = 2;
    config.events_inbox.max_retries = max_retries;
    config.events_inbox.retry_backoff_initial = Duration::from_millis(200);
    config.events_inbox.retry_backoff_max = Duration::from_millis(200);
    config.events_inbox.handler_transaction = HandlerTransaction::Batch;
    let running = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", handler.clone())
        .build()
        .expect("build")
        .start()
        .await
        .expect("start");
    let outbox = outbox_of(&store);
    let mut tx = store.begin().await.expect("begin");
    let mut ids = Vec::new();
    for n in 0..20 {
        let event = Event::new("Ping", format!("k{n}"), Ping { n });
        ids.push(event.id);
        outbox.emit(&mut tx, &event).await.expect("emit");
    }
    store.commit(tx).await.expect("commit");
    let terminal = |r: &bandeja_core::store::RowView| {
        matches!(
            r.message.status,
            MessageStatus::Completed | MessageStatus::Failed
        )
    };
    let waited = eventually(Duration::from_secs(20), || async {
        let rows = store.rows(BoxKind::InboxEvents).await.ok()?;
        (rows.len() == 20 && rows.iter().all(terminal)).then_some(rows)
    })
    .await;
    let Ok(rows) = waited else {
        let rows = store.rows(BoxKind::InboxEvents).await.expect("rows");
        let states: Vec<_> = rows
            .iter()
            .map(|r| (r.message.status, r.message.retry_count))
            .collect();
        panic!("{fault:?}: every message COMPLETED or FAILED in time: {states:?}");
    };
    running.shutdown().await;
    let guilty = rows
        .iter()
        .find(|r| r.message.record.id == ids[usize::try_from(GUILTY).unwrap_or_default()])
        .expect("the guilty row");
    if let Fault::CommitsItself = fault {
        // Its work may have committed: FAILED at once, saying what to fix.
        assert_eq!(guilty.message.status, MessageStatus::Failed, "{fault:?}");
        let error = guilty.message.last_error.clone().unwrap_or_default();
        assert!(
            error.contains("never commit or roll back"),
            "{fault:?}: last_error should say what to fix: {error}"
        );
    }
    // (After a `ROLLBACK`, its retry runs alone, where SQLite cannot see what the handler
    // did: the row is COMPLETED with its work lost — docs/reliability.md, "Limits".)
    assert!(
        handler.runs_of(GUILTY) <= max_retries + 1,
        "{fault:?}: the guilty handler ran {} times",
        handler.runs_of(GUILTY)
    );
    let mut applied: Vec<i64> = sqlx::query_scalar("SELECT n FROM effects ORDER BY n")
        .fetch_all(store.pool())
        .await
        .expect("effects");
    applied.retain(|n| *n != 10);
    let healthy: Vec<i64> = (0..20).filter(|n| *n != 10).collect();
    assert_eq!(
        applied, healthy,
        "{fault:?}: each healthy message's work applied once"
    );
    let healthy_rows: Vec<_> = rows
        .iter()
        .filter(|r| r.message.record.id != guilty.message.record.id)
        .collect();
    assert!(
        healthy_rows
            .iter()
            .all(|r| r.message.status == MessageStatus::Completed && r.message.retry_count == 0),
        "{fault:?}: every healthy message COMPLETED without spending a retry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_commits_the_transaction_itself_is_charged_alone() {
    charged_to_the_guilty_handler_alone(Fault::CommitsItself).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_rolls_back_the_transaction_itself_is_charged_alone() {
    charged_to_the_guilty_handler_alone(Fault::RollsBackItself).await;
}

/// After a handler's own `COMMIT`, sqlx's `ROLLBACK` of the dropped transaction fails and
/// its count of the connection's transactions stays up: reused, that connection would
/// refuse the store's next `BEGIN IMMEDIATE` (a claim, an outcome write). It is closed
/// instead, so every later write transaction begins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_whose_transaction_a_handler_committed_is_not_reused() {
    let (store, _dir) = fresh_store().await;
    for round in 0..5 {
        let mut tx = store.begin().await.expect("begin");
        sqlx::query("COMMIT")
            .execute(&mut *tx)
            .await
            .expect("a handler's own COMMIT");
        drop(tx);
        for n in 0..10 {
            let began = store.pool().begin_with("BEGIN IMMEDIATE").await;
            let tx = began.unwrap_or_else(|e| {
                panic!("round {round}, write transaction {n} after the handler's COMMIT: {e}")
            });
            tx.commit().await.expect("commit");
        }
    }
}
