//! The runtime conformance suite: the whole path (emission → dispatch → in-process transport
//! → inbox → handler in its transaction) on a real store, with
//! [`runtime_conformance_tests!`](crate::runtime_conformance_tests). This module holds the
//! helpers of the checks; the checks are in the topic modules below, the test handler in
//! `recorder`.

use std::time::Duration;

use bandeja_core::envelope::{Event, MessageId};
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView, Store};
use bandeja_core::testing::eventually;

use crate::fixtures::outbox_of;
use crate::fixtures::Ping;

pub mod batches;
pub mod correlation;
pub mod delivery;
pub mod emission;
pub mod failures;
pub mod fleet;
pub mod lifecycle;
pub mod ordering;
mod recorder;
pub mod sagas;
pub mod slow_handlers;
pub mod stragglers;
pub mod tenants;
pub mod timeouts;
pub mod versions;

pub(crate) const WAIT: Duration = Duration::from_secs(20);

pub(crate) async fn emit_pings<S: Store>(
    store: &S,
    range: std::ops::Range<u64>,
    key: impl Fn(u64) -> String,
) -> Vec<MessageId> {
    let outbox = outbox_of(store);
    let mut tx = store.begin().await.expect("begin");
    let mut ids = Vec::new();
    for n in range {
        let event = Event::new("Ping", key(n), Ping { n });
        ids.push(event.id);
        outbox.emit(&mut *tx, &event).await.expect("emit");
    }
    store.commit(tx).await.expect("commit");
    ids
}

pub(crate) async fn rows<S: Inspect>(store: &S, box_kind: BoxKind) -> Vec<RowView> {
    store.rows(box_kind).await.expect("rows")
}

pub(crate) async fn wait_rows<S: Inspect>(
    store: &S,
    box_kind: BoxKind,
    done: impl Fn(&[RowView]) -> bool,
) -> Vec<RowView> {
    eventually(WAIT, || async {
        let rows = rows(store, box_kind).await;
        done(&rows).then_some(rows)
    })
    .await
    .unwrap_or_else(|e| panic!("{box_kind}: {e}"))
}

pub(crate) fn all(status: MessageStatus, n: usize) -> impl Fn(&[RowView]) -> bool {
    move |rows| rows.len() == n && rows.iter().all(|r| r.message.status == status)
}

/// The payload number of a `Ping` row.
pub(crate) fn ping_number(row: &RowView) -> u64 {
    serde_json::from_str::<Ping>(&row.message.record.payload).map_or(u64::MAX, |p| p.n)
}
