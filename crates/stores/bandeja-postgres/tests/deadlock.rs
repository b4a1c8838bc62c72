//! A real deadlock between two handlers is a transient conflict: PostgreSQL aborts one of
//! them with `40P01`, and bandeja runs the victim again without spending one of its
//! retries (`Store::is_transient`).
//!
//! Two messages of different partition keys, each handled in a transaction of its own
//! (`handler-transaction = "message"`), lock the two rows of a table in opposite order. A
//! barrier both first runs wait at makes sure each holds its first lock before it asks for
//! the second, so the deadlock is certain, not a matter of timing.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::config::HandlerTransaction;
use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;
use bandeja_core::{
    Bandeja, BoxKind, Event, EventHandler, HandlerContext, HandlerError, MessageId, MessageStatus,
};
use bandeja_postgres::PgStore;
use common::try_fresh_store;
use tokio::sync::Barrier;

/// Locks row `n` of `locks`, then the other one, then records its effect. Its runs are
/// counted in memory, outside the transaction (a rolled-back run still counts).
#[derive(Clone)]
struct Crossing {
    schema: String,
    /// Both first runs hold their first lock before either asks for its second.
    barrier: Arc<Barrier>,
    runs: Arc<Mutex<HashMap<MessageId, u32>>>,
}

impl Crossing {
    /// Counts a run of `id`; how many runs it had before this one.
    fn count(&self, id: MessageId) -> u32 {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let run = runs.entry(id).or_default();
        *run += 1;
        *run - 1
    }

    fn runs(&self) -> HashMap<MessageId, u32> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl EventHandler<PgStore, Ping> for Crossing {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, PgStore>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        let earlier_runs = self.count(ctx.message_id());
        let (first, second) = if event.payload.n == 1 { (1, 2) } else { (2, 1) };
        let lock = format!(
            "SELECT id FROM \"{}\".locks WHERE id = $1 FOR UPDATE",
            self.schema
        );
        sqlx::query(&lock).bind(first).execute(ctx.conn()).await?;
        if earlier_runs == 0 {
            self.barrier.wait().await;
        }
        // Both hold their first row and wait for the other's: PostgreSQL aborts one.
        sqlx::query(&lock).bind(second).execute(ctx.conn()).await?;
        let effect = format!(
            "INSERT INTO \"{}\".effects (message_id, n) VALUES ($1, $2)",
            self.schema
        );
        sqlx::query(&effect)
            .bind(ctx.message_id().0)
            .bind(i64::try_from(event.payload.n).unwrap_or(i64::MAX))
            .execute(ctx.conn())
            .await?;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_between_two_handlers_costs_no_retry() {
    let Some((store, guard)) = try_fresh_store().await else {
        return;
    };
    let schema = guard.schema().to_owned();
    for sql in [
        format!("CREATE TABLE \"{schema}\".locks (id int4 PRIMARY KEY)"),
        format!("INSERT INTO \"{schema}\".locks (id) VALUES (1), (2)"),
        format!("CREATE TABLE \"{schema}\".effects (message_id uuid NOT NULL, n int8 NOT NULL)"),
    ] {
        sqlx::query(&sql)
            .execute(store.pool())
            .await
            .expect("test tables");
    }

    let mut config = fast_config();
    config.events_inbox.handler_transaction = HandlerTransaction::Message;
    let crossing = Crossing {
        schema: schema.clone(),
        barrier: Arc::new(Barrier::new(2)),
        runs: Arc::default(),
    };
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .handler_concurrency(4)
        .on_event::<Ping, _>("crossing", crossing.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    for (n, key) in [(1, "a"), (2, "b")] {
        bandeja
            .emit(&Event::new("Ping", key, Ping { n }))
            .await
            .expect("emit");
    }

    let rows = eventually(Duration::from_secs(30), || async {
        let rows = store.rows(BoxKind::InboxEvents).await.ok()?;
        (rows.len() == 2
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed))
        .then_some(rows)
    })
    .await
    .expect("both messages completed");
    running.shutdown().await;

    for row in &rows {
        assert_eq!(
            row.message.retry_count, 0,
            "a deadlock spends no retry: {:?}",
            row.message.last_error
        );
    }
    let effects: Vec<(uuid::Uuid, i64)> = sqlx::query_as(&format!(
        "SELECT message_id, n FROM \"{schema}\".effects ORDER BY n"
    ))
    .fetch_all(store.pool())
    .await
    .expect("effects");
    let expected: Vec<(uuid::Uuid, i64)> = {
        let mut by_n: Vec<_> = rows
            .iter()
            .map(|r| (r.message.record.id.0, i64::try_from(n_of(r)).unwrap_or(0)))
            .collect();
        by_n.sort_by_key(|(_, n)| *n);
        by_n
    };
    assert_eq!(effects, expected, "exactly one effect per message");

    let runs = crossing.runs();
    let mut counts: Vec<u32> = runs.values().copied().collect();
    counts.sort_unstable();
    assert_eq!(
        counts,
        vec![1, 2],
        "the survivor ran once, the deadlock's victim twice"
    );
    let victim = rows
        .iter()
        .find(|r| runs.get(&r.message.record.id) == Some(&2))
        .expect("the victim's row");
    let error = victim.message.last_error.as_deref().unwrap_or_default();
    assert!(error.contains("deadlock detected"), "{error}");
}

/// The payload number of an inbox row.
fn n_of(row: &bandeja_core::store::RowView) -> u64 {
    serde_json::from_str::<Ping>(&row.message.record.payload).map_or(0, |ping| ping.n)
}
