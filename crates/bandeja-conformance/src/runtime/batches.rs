//! Batch handlers: several events per call, and the poison event of a failed batch fails
//! alone.

use std::sync::{Arc, Mutex};

use bandeja_core::config::Enabled;
use bandeja_core::envelope::{Event, Payload};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventBatchHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Store};

use super::{all, emit_pings, rows, wait_rows};
use crate::fixtures::{fast_config, Ping, Pong};

/// Records the size of each batch it gets; fails (permanently) any batch holding `poison`.
#[derive(Clone, Default)]
struct Batcher {
    sizes: Arc<Mutex<Vec<usize>>>,
    handled: Arc<Mutex<Vec<u64>>>,
    poison: u64,
}

impl<S: Store> EventBatchHandler<S, Ping> for Batcher {
    async fn handle_batch(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        events: Vec<Event<Ping>>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut sizes) = self.sizes.lock() {
            sizes.push(events.len());
        }
        if events.iter().any(|e| e.payload.n == self.poison) {
            return Err(HandlerError::permanent("poison"));
        }
        for event in &events {
            ctx.emit_caused_by(
                event,
                Event::new(
                    "Ping",
                    format!("p{}", event.payload.n),
                    Pong { n: event.payload.n },
                ),
            )?;
        }
        if let Ok(mut handled) = self.handled.lock() {
            handled.extend(events.iter().map(|e| e.payload.n));
        }
        Ok(())
    }
}

/// A batch handler gets several events per call in the batched path; the poison event of a
/// failed batch is isolated and fails alone, the others complete once, with what they emitted.
pub async fn batch_handler_gets_batches_and_a_poison_event_fails_alone<S: Inspect>(store: S) {
    let batcher = Batcher {
        poison: 7,
        ..Batcher::default()
    };
    let mut config = fast_config();
    config.events_inbox.handler_transaction = bandeja_core::config::HandlerTransaction::Batch;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .handler_concurrency(2)
        .on_event_batch::<Ping, _>("batcher", batcher.clone())
        .build()
        .expect("build");
    // Everything is in the inbox before the workers start, so batches are full.
    let mut dispatch_only = fast_config();
    dispatch_only.events_inbox.enabled = Enabled::Off;
    let outbox_only = Bandeja::builder(store.clone())
        .config(dispatch_only)
        .on_event_batch::<Ping, _>("batcher", batcher.clone())
        .build()
        .expect("build");
    let dispatch = outbox_only.start().await.expect("start");
    let ids = emit_pings(&store, 0..20, |n| format!("k{n}")).await;
    wait_rows(
        &store,
        BoxKind::OutboxEvents,
        all(MessageStatus::Completed, 20),
    )
    .await;
    dispatch.shutdown().await;
    assert_eq!(ids.len(), 20);
    let running = bandeja.start().await.expect("start");
    let inbox = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.len() == 20 && rows.iter().all(|r| r.message.status.is_terminal())
    })
    .await;
    running.shutdown().await;
    let failed: Vec<_> = inbox
        .iter()
        .filter(|r| r.message.status == MessageStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].message.record.payload.contains(":7"));
    let mut handled = batcher.handled.lock().expect("handled").clone();
    handled.sort_unstable();
    assert_eq!(
        handled,
        (0..20).filter(|n| *n != 7).collect::<Vec<_>>(),
        "each good event handled once"
    );
    assert!(
        batcher
            .sizes
            .lock()
            .expect("sizes")
            .iter()
            .any(|size| *size > 1),
        "events came in batches"
    );
    let pongs = rows(&store, BoxKind::OutboxEvents)
        .await
        .into_iter()
        .filter(|r| r.message.record.message_type == Pong::TYPE)
        .count();
    assert_eq!(pongs, 19, "emissions of the rolled-back batch were undone");
}
