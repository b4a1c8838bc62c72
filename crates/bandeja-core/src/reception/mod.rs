//! Stage 4, reception: a message arriving from a transport is stored in the inbox (one row
//! per local subscriber, dedup by `(id, subscriber)`) before the transport acknowledges it.
//! Redeliveries absorbed by the dedup are counted in `bandeja_duplicates_absorbed_total`.

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;
use crate::processing::registry::Registry;
use crate::record::{MessageKind, MessageRecord};
use crate::store::{Delivery, ReceiveReport, Store};

/// Where a transport hands received messages.
#[async_trait]
pub trait InboxSink: Send + Sync {
    /// Stores a received message. When this returns `Ok` the transport may acknowledge.
    async fn accept(&self, kind: MessageKind, records: &[MessageRecord]) -> Result<ReceiveReport>;
}

/// The inbox sink of a store and this process's subscribers.
pub(crate) struct Reception<S: Store> {
    pub(crate) store: S,
    pub(crate) registry: Arc<Registry<S>>,
}

#[async_trait]
impl<S: Store> InboxSink for Reception<S> {
    async fn accept(&self, kind: MessageKind, records: &[MessageRecord]) -> Result<ReceiveReport> {
        let subscribers: Vec<Vec<String>> = records
            .iter()
            .map(|r| {
                self.registry
                    .subscribers_for(kind, &r.message_type, r.inbox_tenant())
            })
            .collect();
        let deliveries: Vec<Delivery<'_>> = records
            .iter()
            .zip(&subscribers)
            .map(|(record, subscribers)| Delivery {
                record,
                subscribers,
            })
            .collect();
        let report = self.store.receive(kind, &deliveries).await?;
        crate::telemetry::duplicates(kind.inbox(), report.duplicates);
        if report.inserted > 0 {
            self.store.wakers().wake(kind.inbox());
        }
        Ok(report)
    }
}
