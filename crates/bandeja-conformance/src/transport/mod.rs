//! The transport conformance suite: what every
//! [`Transport`](bandeja_core::transport::Transport) must do, checked through the whole path
//! between services that share nothing but the broker (each has its own store):
//! publish with acknowledgement, reception with dedup, redelivery after a consumer that
//! stored but never acknowledged, per-key order, headers kept intact, commands routed by
//! topic, bad bodies stored FAILED without blocking; and the dispatcher's distrust of what
//! it cannot check (a short result list, a claim failing part way, a lease too short for a
//! publish, a deadline already past: [`dispatch`]). Run it with
//! [`transport_conformance_tests!`](crate::transport_conformance_tests). This module holds
//! the helpers of the checks; the checks are in the topic modules below, each taking a
//! [`Harness`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_core::envelope::{Command, Event, MessageId};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{CommandHandler, EventHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Running;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView, Store};
use bandeja_core::testing::eventually;

use crate::fixtures::outbox_of;
use crate::fixtures::{Archive, Ping};

pub mod bad_bodies;
pub mod delivery;
pub mod dispatch;
mod flaky;
pub mod fleet;
mod harness;
pub mod ordering;
pub mod redelivery;

pub use harness::{Harness, StoreFuture, TransportFuture};

pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// What handlers saw: (message id, partition key or subscriber, number).
#[derive(Clone, Default)]
pub(crate) struct Seen(Arc<Mutex<Vec<(MessageId, String, u64)>>>);

impl Seen {
    pub(crate) fn push(&self, id: MessageId, key: String, n: u64) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push((id, key, n));
        }
    }

    pub(crate) fn all(&self) -> Vec<(MessageId, String, u64)> {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub(crate) fn ids(&self) -> Vec<MessageId> {
        let mut ids: Vec<MessageId> = self.all().into_iter().map(|s| s.0).collect();
        ids.sort();
        ids
    }
}

impl<S: Store> EventHandler<S, Ping> for Seen {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        let key = event.aggregate_id.clone().unwrap_or_default();
        self.push(event.id, key, event.payload.n);
        Ok(())
    }
}

impl<S: Store> CommandHandler<S, Archive> for Seen {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        command: Command<Archive>,
    ) -> Result<(), HandlerError> {
        self.push(command.id, ctx.subscriber().to_owned(), command.payload.n);
        Ok(())
    }
}

pub(crate) async fn rows<S: Inspect>(store: &S, box_kind: BoxKind) -> Vec<RowView> {
    store.rows(box_kind).await.expect("rows")
}

pub(crate) async fn wait_rows<S: Inspect>(
    store: &S,
    box_kind: BoxKind,
    what: &str,
    done: impl Fn(&[RowView]) -> bool,
) -> Vec<RowView> {
    eventually(WAIT, || async {
        let rows = rows(store, box_kind).await;
        done(&rows).then_some(rows)
    })
    .await
    .unwrap_or_else(|e| panic!("{box_kind}: {what}: {e}"))
}

pub(crate) fn completed(n: usize) -> impl Fn(&[RowView]) -> bool {
    move |rows| {
        rows.len() == n
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed)
    }
}

/// Emits `pings` (number, key) in one transaction; returns their ids in order.
pub(crate) async fn emit<S: Store>(
    store: &S,
    pings: impl IntoIterator<Item = (u64, String)>,
) -> Vec<MessageId> {
    let outbox = outbox_of(store);
    let mut tx = store.begin().await.expect("begin");
    let mut ids = Vec::new();
    for (n, key) in pings {
        let event = Event::new("Ping", key, Ping { n });
        ids.push(event.id);
        outbox.emit(&mut *tx, &event).await.expect("emit");
    }
    store.commit(tx).await.expect("commit");
    ids
}

pub(crate) async fn stop(running: Running) {
    running.shutdown_within(Duration::from_secs(10)).await;
}
