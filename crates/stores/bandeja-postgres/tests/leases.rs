//! Leases on a pool the handlers fill: with a pool of two connections and two handlers
//! that each hold one for longer than the lease, renewals still get through (they have
//! connections of their own), so each message is handled once, with no retry spent and no
//! takeover.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;
use bandeja_core::{
    Bandeja, BoxKind, Event, EventHandler, HandlerContext, HandlerError, HandlerTransaction,
    MessageStatus, Store,
};
use bandeja_postgres::{PgStore, PgStoreOptions};

/// Holds its transaction's connection for `takes`, counting its runs (outside it).
#[derive(Clone)]
struct Holder {
    takes: Duration,
    runs: Arc<Mutex<BTreeMap<u64, u32>>>,
}

impl EventHandler<PgStore, Ping> for Holder {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, PgStore>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut runs) = self.runs.lock() {
            *runs.entry(event.payload.n).or_default() += 1;
        }
        sqlx::query("SELECT 1")
            .execute(ctx.conn())
            .await
            .map_err(|e| {
                HandlerError::from(Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
            })?;
        tokio::time::sleep(self.takes).await;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_are_renewed_while_handlers_hold_every_connection() {
    let Some(guard) = bandeja_postgres::testing::fresh_schema("bandeja_t").await else {
        return;
    };
    let options = PgStoreOptions {
        max_connections: 3,
        ..PgStoreOptions::with_schema(guard.schema())
    };
    let url = bandeja_postgres::testing::database_url();
    let store = PgStore::connect_with_options(&url, &options)
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    let handler = Holder {
        takes: Duration::from_millis(2500),
        runs: Arc::default(),
    };
    let mut config = fast_config();
    config.events_inbox.lock_at_most_for = Duration::from_millis(1500);
    config.events_inbox.lock_at_least_for = Duration::from_millis(100);
    config.events_inbox.handler_transaction = HandlerTransaction::Message;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .handler_concurrency(3)
        .on_event::<Ping, _>("s", handler.clone())
        .build()
        .expect("build");
    let outbox = bandeja.outbox();
    let mut tx = store.begin().await.expect("begin");
    for n in 0..6u64 {
        outbox
            .emit(&mut tx, &Event::new("Ping", format!("k{n}"), Ping { n }))
            .await
            .expect("emit");
    }
    store.commit(tx).await.expect("commit");
    let running = bandeja.start().await.expect("start");
    let rows = eventually(Duration::from_secs(30), || async {
        let rows = store.rows(BoxKind::InboxEvents).await.ok()?;
        (rows.len() == 6
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed))
        .then_some(rows)
    })
    .await
    .expect("every message handled");
    running.shutdown().await;
    let runs = handler.runs.lock().expect("runs").clone();
    assert!(
        runs.values().all(|&n| n == 1) && runs.len() == 6,
        "each message entered once: {runs:?}"
    );
    assert!(
        rows.iter()
            .all(|r| r.message.retry_count == 0 && r.message.takeovers == 0),
        "no retry, no takeover: {:?}",
        rows.iter()
            .map(|r| (
                r.message.retry_count,
                r.message.takeovers,
                r.message.last_error.clone()
            ))
            .collect::<Vec<_>>()
    );
}
