//! Stage 4, reception: a message arriving from a transport is stored in the inbox (one row
//! per local subscriber, dedup by `(id, subscriber)`) before the transport acknowledges it.
//! Redeliveries absorbed by the dedup are counted in `bandeja_duplicates_absorbed_total`.
//!
//! A body that is not a message, or a message of a type no local subscriber handles, is
//! neither lost nor allowed to block the consumer: it is stored as an inbox row of the
//! subscriber [`REJECTED_SUBSCRIBER`](crate::transport::wire::REJECTED_SUBSCRIBER) with the
//! reason in a header, and the inbox worker marks it FAILED with that reason, where
//! operators see it (`bandeja messages list --status failed`).

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;
use crate::processing::registry::Registry;
use crate::record::{MessageKind, MessageRecord};
use crate::store::{Delivery, ReceiveReport, Store};
use crate::transport::wire;

/// Where a transport hands received messages.
#[async_trait]
pub trait InboxSink: Send + Sync {
    /// Stores received bodies (in the [`wire`] format) in one transaction, in order. When
    /// this returns `Ok` the transport may acknowledge all of them; on `Err` none is stored.
    async fn accept(&self, kind: MessageKind, bodies: &[&[u8]]) -> Result<ReceiveReport>;
}

/// The inbox sink of a store and this process's subscribers.
pub(crate) struct Reception<S: Store> {
    pub(crate) store: S,
    pub(crate) registry: Arc<Registry<S>>,
    pub(crate) service: String,
}

impl<S: Store> Reception<S> {
    /// The record to store for a body and the subscribers that get a row; `None` for a
    /// message of a known type that no subscriber of this tenant takes.
    fn route(&self, kind: MessageKind, body: &[u8]) -> Option<(MessageRecord, Vec<String>)> {
        let rejected = || vec![wire::REJECTED_SUBSCRIBER.to_owned()];
        let record = match wire::decode(kind, body) {
            Ok(record) => record,
            Err(error) => {
                tracing::warn!(%error, bytes = body.len(), "malformed message stored as FAILED");
                return Some((wire::malformed(kind, body, &error.to_string()), rejected()));
            }
        };
        let subscribers =
            self.registry
                .subscribers_for(kind, &record.message_type, record.inbox_tenant());
        if !subscribers.is_empty() {
            return Some((record, subscribers));
        }
        if self.registry.has_type(kind, &record.message_type) {
            return None;
        }
        let what = match kind {
            MessageKind::Event => "no subscriber for event type",
            MessageKind::Command => "no handler for command type",
        };
        let reason = format!(
            "{what} `{}` in service `{}`: register one and have the publisher replay it (`bandeja replay`), or fix the publisher's routing",
            record.message_type, self.service
        );
        tracing::warn!(message_id = %record.id, %reason, "message stored as FAILED");
        Some((wire::reject(record, &reason), rejected()))
    }
}

#[async_trait]
impl<S: Store> InboxSink for Reception<S> {
    async fn accept(&self, kind: MessageKind, bodies: &[&[u8]]) -> Result<ReceiveReport> {
        let routed: Vec<(MessageRecord, Vec<String>)> = bodies
            .iter()
            .filter_map(|body| self.route(kind, body))
            .collect();
        let deliveries: Vec<Delivery<'_>> = routed
            .iter()
            .map(|(record, subscribers)| Delivery {
                record,
                subscribers,
            })
            .collect();
        let report = self.store.receive(kind, &deliveries).await?;
        crate::fault::point("after-inbox-insert-before-ack");
        crate::telemetry::duplicates(kind.inbox(), report.duplicates);
        if report.inserted > 0 {
            self.store.wakers().wake(kind.inbox());
        }
        Ok(report)
    }
}
