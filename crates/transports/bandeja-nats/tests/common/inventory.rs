//! The `inventory` service the receiving tests run: a `stock` subscriber recording the
//! pings it handled, and pings published through the transport.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::transport::{Outgoing, Transport};
use bandeja_core::{
    Bandeja, Event, EventHandler, HandlerContext, HandlerError, MessageId, MessageKind,
    MessageRecord, Running,
};
use bandeja_nats::NatsTransport;
use bandeja_sqlite::SqliteStore;

/// A publish deadline far enough away for any test.
pub(crate) fn soon() -> bandeja_core::transport::Instant {
    bandeja_core::transport::Instant::now() + Duration::from_secs(30)
}

pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// Records the ids of the pings it handled.
#[derive(Clone, Default)]
pub(crate) struct Seen(Arc<Mutex<Vec<MessageId>>>);

impl Seen {
    pub(crate) fn ids(&self) -> Vec<MessageId> {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl EventHandler<SqliteStore, Ping> for Seen {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, SqliteStore>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(event.id);
        }
        Ok(())
    }
}

pub(crate) fn ping(n: u64) -> MessageRecord {
    MessageRecord::from_event(&Event::new("Ping", "k", Ping { n })).expect("record")
}

/// The `inventory` service on `store`, its `stock` subscriber recording into `seen`.
pub(crate) async fn start_inventory(
    store: &SqliteStore,
    transport: &NatsTransport,
    seen: &Seen,
) -> Running {
    Bandeja::builder(store.clone())
        .config(fast_config())
        .service("inventory")
        .transport(Arc::new(transport.clone()))
        .on_event::<Ping, _>("stock", seen.clone())
        .build()
        .expect("build")
        .start()
        .await
        .expect("start")
}

/// Publishes one ping through the transport.
pub(crate) async fn publish_one(
    transport: &NatsTransport,
    record: &MessageRecord,
    partition: u16,
    body: Vec<u8>,
) -> Result<(), bandeja_core::transport::TransportError> {
    let outgoing = Outgoing {
        record,
        address: &record.message_type,
        partition,
        body,
    };
    transport
        .publish(MessageKind::Event, std::slice::from_ref(&outgoing), soon())
        .await
        .pop()
        .expect("one result")
}
