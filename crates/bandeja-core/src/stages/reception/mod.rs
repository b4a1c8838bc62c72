//! Stage 4, reception: a message arriving from a transport is stored in the inbox (one row
//! per subscription of this service registered in the database for its type, dedup by
//! `(id, subscriber)`) before the transport acknowledges it. The subscriptions are read for
//! each received batch, so a process that receives a type only a newer process of its
//! service subscribes to stores the row that the newer process handles; nothing is
//! acknowledged and dropped for lack of a local subscriber. Redeliveries absorbed by the
//! dedup are counted in `bandeja_duplicates_absorbed_total`.
//!
//! A body that is not a message, or a message of a type no subscription of this service
//! takes, is neither lost nor allowed to block the consumer: it is stored as an inbox row of
//! the subscriber [`REJECTED_SUBSCRIBER`](crate::transport::wire::REJECTED_SUBSCRIBER) with
//! the reason in a header. The inbox worker marks it FAILED with that reason, where
//! operators see it (`bandeja messages list --status failed`); once a subscription for its
//! type exists, `bandeja retry` of the row routes it to that subscription.

pub(crate) mod rejected;

use async_trait::async_trait;

use crate::error::Result;
use crate::record::{MessageKind, MessageRecord};
use crate::store::{Delivery, ReceiveReport, Store};
use crate::subscriptions::RouteTable;
use crate::transport::wire;
pub use crate::transport::InboxSink;

/// The inbox sink of a store and this service's subscriptions.
pub(crate) struct Reception<S: Store> {
    pub(crate) store: S,
    /// Whether this process's subscriptions are registered: nothing is stored before
    /// (the transport keeps the messages and delivers them again).
    pub(crate) registered: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub(crate) service: String,
    /// This service's command topic (what [`InboxSink::addresses`] answers for commands).
    pub(crate) command_topic: Option<String>,
}

impl<S: Store> Reception<S> {
    /// The record to store for a body and the subscribers that get a row; `None` for a
    /// message of a known type that no subscription of this tenant takes.
    fn route(
        &self,
        kind: MessageKind,
        routes: &RouteTable,
        body: &[u8],
    ) -> Option<(MessageRecord, Vec<String>)> {
        let rejected = || vec![wire::REJECTED_SUBSCRIBER.to_owned()];
        let record = match wire::decode(kind, body) {
            Ok(record) => record,
            Err(error) => {
                tracing::warn!(%error, bytes = body.len(), "malformed message stored as FAILED");
                return Some((wire::malformed(kind, body, &error.to_string()), rejected()));
            }
        };
        let subscribers = routes.subscribers_for(&record.message_type, record.inbox_tenant());
        if !subscribers.is_empty() {
            return Some((record, subscribers));
        }
        if routes.has_type(&record.message_type) {
            return None;
        }
        let what = match kind {
            MessageKind::Event => "no subscriber for event type",
            MessageKind::Command => "no handler for command type",
        };
        let reason = format!(
            "{what} `{}` in service `{}`: register one, then retry this row (`bandeja retry`) to route it, or fix the publisher's routing",
            record.message_type, self.service
        );
        tracing::warn!(message_id = %record.id, %reason, "message stored as FAILED");
        Some((wire::reject(record, &reason), rejected()))
    }
}

#[async_trait]
impl<S: Store> InboxSink for Reception<S> {
    async fn accept(&self, kind: MessageKind, bodies: &[&[u8]]) -> Result<ReceiveReport> {
        if !self.registered.load(std::sync::atomic::Ordering::Acquire) {
            return Err(crate::error::Error::NotRegistered);
        }
        let routes = RouteTable::new(self.store.routes(kind, Some(&self.service)).await?);
        let routed: Vec<(MessageRecord, Vec<String>)> = bodies
            .iter()
            .filter_map(|body| self.route(kind, &routes, body))
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

    async fn addresses(&self, kind: MessageKind) -> Result<Option<Vec<String>>> {
        Ok(Some(match kind {
            MessageKind::Event => {
                RouteTable::new(self.store.routes(kind, Some(&self.service)).await?).types()
            }
            MessageKind::Command => self.command_topic.iter().cloned().collect(),
        }))
    }
}
