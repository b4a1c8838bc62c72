//! The monitor in the runtime spares a slow drain.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_core::config::{Enabled, HandlerTransaction};
use bandeja_core::envelope::Event;
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Store};
use bandeja_core::testing::eventually;

use crate::fixtures::{fast_config, Ping};

/// Takes a while per message: a backlog that drains slower than the threshold.
#[derive(Clone, Default)]
struct Slow(Arc<Mutex<Vec<u64>>>);

impl Slow {
    fn seen(&self) -> usize {
        self.0.lock().map(|s| s.len()).unwrap_or_default()
    }
}

impl<S: Store> EventHandler<S, Ping> for Slow {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        tokio::time::sleep(Duration::from_millis(100)).await; // the handler's work
        if let Ok(mut seen) = self.0.lock() {
            seen.push(event.payload.n);
        }
        Ok(())
    }
}

/// The monitor running every 50 ms with a 1 s threshold never fails a message of a
/// backlog that takes more than twice as long to drain one message at a time: every row
/// ends COMPLETED (the rule it replaces failed the rows waiting longer than 1 s).
pub async fn the_monitor_spares_a_slow_drain_in_the_runtime<S: Inspect>(store: S) {
    let mut config = fast_config();
    config.staleness.enabled = true;
    config.staleness.pending = Duration::from_secs(1);
    config.staleness.processing = Duration::from_secs(60);
    config.staleness.interval = Duration::from_millis(50);
    config.events_inbox.batch_size = 1;
    config.events_inbox.handler_transaction = HandlerTransaction::Message;
    config.events_inbox.enabled = Enabled::On;
    let slow = Slow::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .handler_concurrency(1)
        .on_event::<Ping, _>("slow", slow.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let total = 24;
    for n in 0..total {
        bandeja
            .emit(&Event::new("Ping", format!("k{n}"), Ping { n }))
            .await
            .expect("emit");
    }
    let settled = eventually(Duration::from_secs(30), || async {
        let rows = store.rows(BoxKind::InboxEvents).await.ok()?;
        let live = rows.iter().any(|r| {
            matches!(
                r.message.status,
                MessageStatus::Pending | MessageStatus::Processing
            )
        });
        (rows.len() == usize::try_from(total).unwrap_or(0) && !live).then_some(rows)
    })
    .await
    .expect("the backlog drained");
    running.shutdown().await;
    let failed: Vec<_> = settled
        .iter()
        .filter(|r| r.message.status != MessageStatus::Completed)
        .map(|r| r.message.last_error.clone())
        .collect();
    assert!(failed.is_empty(), "rows failed while waiting: {failed:?}");
    assert_eq!(slow.seen(), 24);
}
