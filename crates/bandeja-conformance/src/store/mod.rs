//! The store conformance suite: every store crate runs these checks against a fresh store (its
//! own database or schema per test) with [`store_conformance_tests!`](crate::store_conformance_tests).
//! Adding a store means passing this suite. This module holds the helpers of the checks; the
//! checks are in the topic modules below.

use std::time::Duration;

use bandeja_core::envelope::{Event, MessageId};
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord, StoredMessage};
use bandeja_core::store::{ClaimRequest, Inspect, Outcome, Resolution, RowView, Store};
use bandeja_core::tenant::TenantId;

use crate::fixtures::Ping;

pub mod claims;
pub mod emission;
pub mod inbox;
pub mod leases;
pub mod ordering;
pub mod relay;
pub mod resolution;

pub(crate) fn ping(n: u64, key: &str) -> MessageRecord {
    let mut record =
        MessageRecord::from_event(&Event::new("Ping", key, Ping { n })).expect("valid event");
    record.tenant_id = TenantId::default_tenant();
    record
}

pub(crate) fn request(worker: &str, limit: usize) -> ClaimRequest<'_> {
    ClaimRequest {
        worker_id: worker,
        limit,
        lease: Duration::from_secs(30),
        ordered: true,
        from_seq: None,
        tenant: None,
        subscribers: None,
    }
}

pub(crate) async fn emit<S: Store>(store: &S, records: &[MessageRecord]) {
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(&mut *tx, MessageKind::Event, records)
        .await
        .expect("insert");
    store.commit(tx).await.expect("commit");
}

pub(crate) async fn rows<S: Inspect>(store: &S, box_kind: BoxKind) -> Vec<RowView> {
    store.rows(box_kind).await.expect("rows")
}

pub(crate) fn ids(messages: &[StoredMessage]) -> Vec<MessageId> {
    messages.iter().map(|m| m.record.id).collect()
}

pub(crate) fn outcome(message: &StoredMessage, resolution: Resolution) -> Outcome {
    Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution,
    }
}
