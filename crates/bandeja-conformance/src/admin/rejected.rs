//! Rejected rows routed after a subscription appears: a message that reached a service
//! before any process of it subscribed to its type is stored for `bandeja.rejected` and
//! FAILED; once a process registers a subscription for the type, an operator's retry of
//! the rejected row routes it to that subscription, which handles it once.

use std::sync::Arc;

use async_trait::async_trait;

use bandeja_core::admin::{Admin, MessageFilter};
use bandeja_core::envelope::Event;
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord};
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView, Store};
use bandeja_core::testing::eventually;
use bandeja_core::transport::direct::DirectTransport;
use bandeja_core::transport::wire::{self, REJECTED_SUBSCRIBER};
use bandeja_core::transport::{
    InboxSink, Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
};

use crate::fixtures::{fast_config, Ping, Pong};

#[derive(Clone, Default)]
struct Refunds(Arc<std::sync::Mutex<Vec<u64>>>);

impl<S: Store> EventHandler<S, Pong> for Refunds {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Pong>,
    ) -> Result<(), HandlerError> {
        self.0.lock().expect("refunds").push(event.payload.n);
        Ok(())
    }
}

/// Handles pings, doing nothing.
#[derive(Clone)]
struct Quiet;

impl<S: Store> EventHandler<S, Ping> for Quiet {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        _event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        Ok(())
    }
}

async fn wait_inbox<S: Inspect>(store: &S, what: &str, done: impl Fn(&[RowView]) -> bool) {
    eventually(std::time::Duration::from_secs(20), || async {
        let rows = store.rows(BoxKind::InboxEvents).await.expect("rows");
        done(&rows).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{what}: {e}"));
}

fn status_of(rows: &[RowView], subscriber: &str) -> Option<MessageStatus> {
    rows.iter()
        .find(|r| r.message.subscriber.as_deref() == Some(subscriber))
        .map(|r| r.message.status)
}

/// The direct transport, keeping the inbox sink of every subscription it is given: the
/// check hands a body to a service's reception as a broker would.
#[derive(Clone, Default)]
struct Capturing {
    inner: DirectTransport,
    sinks: Arc<std::sync::Mutex<Vec<Arc<dyn InboxSink>>>>,
}

impl Capturing {
    /// The sink of the first event subscription.
    fn sink(&self) -> Arc<dyn InboxSink> {
        self.sinks.lock().expect("sinks")[0].clone()
    }
}

#[async_trait]
impl Transport for Capturing {
    fn name(&self) -> &str {
        "capturing"
    }

    fn partitions(&self) -> u16 {
        self.inner.partitions()
    }

    async fn publish(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> Vec<Result<(), TransportError>> {
        self.inner.publish(kind, messages, deadline).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequest,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        if request.kind == MessageKind::Event {
            self.sinks.lock().expect("sinks").push(sink.clone());
        }
        self.inner.subscribe(request, sink).await
    }
}

/// See the module documentation.
pub async fn retry_routes_a_rejected_message_once_a_subscription_exists<S: Admin>(store: S) {
    // A process of the service with no subscriber for Pong settles the rejected row.
    let refunds = Refunds::default();
    let transport = Arc::new(Capturing::default());
    let running = Bandeja::builder(store.clone())
        .config(fast_config())
        .service("svc")
        .transport(transport.clone())
        .on_event::<Ping, _>("audit", Quiet)
        .build()
        .expect("build")
        .start()
        .await
        .expect("start");
    let pong = MessageRecord::from_event(&Event::new("Pong", "p1", Pong { n: 1 })).expect("record");
    transport
        .sink()
        .accept(MessageKind::Event, &[&wire::encode(&pong, Some("orders"))])
        .await
        .expect("stored");
    wait_inbox(&store, "rejected and FAILED", |rows| {
        status_of(rows, REJECTED_SUBSCRIBER) == Some(MessageStatus::Failed)
    })
    .await;
    let failed = store.rows(BoxKind::InboxEvents).await.expect("rows");
    let reason = failed[0].message.last_error.clone().unwrap_or_default();
    assert!(
        reason.contains("no subscriber for event type `conformance.Pong`"),
        "{reason}"
    );
    // A newer process of the service subscribes to Pong.
    let newer = Bandeja::builder(store.clone())
        .config(fast_config())
        .service("svc")
        .transport(transport)
        .on_event::<Pong, _>("refunds", refunds.clone())
        .build()
        .expect("build the newer process")
        .start()
        .await
        .expect("start the newer process");
    let retried = store
        .retry(&MessageFilter {
            subscriber: Some(REJECTED_SUBSCRIBER.to_owned()),
            ..Default::default()
        })
        .await
        .expect("retry");
    assert_eq!(retried, 1);
    wait_inbox(&store, "routed and handled", |rows| {
        status_of(rows, REJECTED_SUBSCRIBER) == Some(MessageStatus::Completed)
            && status_of(rows, "refunds") == Some(MessageStatus::Completed)
    })
    .await;
    running.shutdown().await;
    newer.shutdown().await;
    assert_eq!(*refunds.0.lock().expect("refunds"), vec![1], "handled once");
    let rows = store.rows(BoxKind::InboxEvents).await.expect("rows");
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(rows.iter().all(|r| r.message.record.id == pong.id));
}
