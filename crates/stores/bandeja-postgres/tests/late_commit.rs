//! A message that commits late with a lower `seq` than messages already handled is not
//! skipped: claims start from the box's live floor, and the floor is read again (at least
//! once a second), so the late row is claimed as soon as it is visible. This is the bug
//! Watermill's SQL subscriber had with an offset cursor.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_conformance::fixtures::outbox_of;
use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;
use bandeja_core::{
    Bandeja, BoxKind, Event, EventHandler, HandlerContext, HandlerError, MessageStatus, Store,
};
use bandeja_postgres::PgStore;
use common::try_fresh_store;

#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<u64>>>);

impl EventHandler<PgStore, Ping> for Seen {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, PgStore>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        self.0.lock().expect("lock").push(event.payload.n);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_commit_with_a_lower_seq_is_delivered() {
    let Some((store, _guard)) = try_fresh_store().await else {
        return;
    };
    let outbox = outbox_of(&store);
    // The late transaction takes its seq first, then stays open.
    let mut late = store.begin().await.expect("begin");
    outbox
        .emit(&mut late, &Event::new("Ping", "late", Ping { n: 0 }))
        .await
        .expect("emit");

    let seen = Seen::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", seen.clone())
        .build()
        .expect("build");
    // Later messages commit first: the workers see them (and a floor above the late one).
    for n in 1..=20 {
        bandeja
            .emit(&Event::new("Ping", format!("k{n}"), Ping { n }))
            .await
            .expect("emit");
    }
    let running = bandeja.start().await.expect("start");
    eventually(Duration::from_secs(10), || async {
        (seen.0.lock().expect("lock").len() == 20).then_some(())
    })
    .await
    .expect("the later messages are handled while the first is uncommitted");

    store.commit(late).await.expect("commit");
    eventually(Duration::from_secs(10), || async {
        seen.0.lock().expect("lock").contains(&0).then_some(())
    })
    .await
    .expect("the late commit is delivered, not skipped");
    running.shutdown().await;

    let outbox_rows = store.rows(BoxKind::OutboxEvents).await.expect("rows");
    let late_row = outbox_rows
        .iter()
        .find(|r| r.message.record.aggregate_id.as_deref() == Some("late"))
        .expect("late row");
    let lowest = outbox_rows.iter().map(|r| r.message.seq).min();
    assert_eq!(
        lowest,
        Some(late_row.message.seq),
        "the late row has the lowest seq"
    );
    assert_eq!(late_row.message.status, MessageStatus::Completed);
    assert_eq!(
        seen.0
            .lock()
            .expect("lock")
            .iter()
            .filter(|n| **n == 0)
            .count(),
        1
    );
}
