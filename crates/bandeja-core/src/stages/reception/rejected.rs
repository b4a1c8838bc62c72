//! The rows reception stored for [`REJECTED_SUBSCRIBER`]: a body that is not a message, or
//! a message of a type no subscription of this service took when it arrived. When the
//! inbox worker claims one (at first, or after an operator's `bandeja retry`), it looks at
//! the subscriptions again: a message whose type has subscriptions now is routed to them
//! (one inbox row each, dedup by `(id, subscriber)`) and the rejected row is COMPLETED;
//! otherwise the row is FAILED with the reason it was rejected, where operators see it.

use crate::attempt;
use crate::context::Shared;
use crate::error::FailureKind;
use crate::record::{BoxKind, MessageRecord, StoredMessage};
use crate::store::{Delivery, Outcome, Store};
use crate::subscriptions::RouteTable;
use crate::transport::wire::{MALFORMED_TYPE, REJECTED_HEADER, REJECTED_SUBSCRIBER};

/// Whether a claimed row is one of reception's rejected rows.
pub(crate) fn is_rejected(message: &StoredMessage) -> bool {
    message.subscriber.as_deref() == Some(REJECTED_SUBSCRIBER)
}

/// Routes the rejected rows whose type has subscriptions now, fails the others; returns
/// the outcomes of all of them.
pub(crate) async fn settle<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    rows: &[&StoredMessage],
) -> Vec<Outcome> {
    let kind = box_kind.kind();
    let config = shared.config.group(box_kind);
    let service = shared.routing.as_ref().map(|r| r.service());
    let routes = match shared.store.routes(kind, service).await {
        Ok(routes) => RouteTable::new(routes),
        Err(error) => {
            tracing::warn!(box = %box_kind, %error, "reading the subscriptions for rejected rows failed: released, tried again later");
            return rows.iter().map(|m| attempt::release(m)).collect();
        }
    };
    let mut outcomes = Vec::with_capacity(rows.len());
    let mut routed: Vec<(MessageRecord, Vec<String>, &StoredMessage)> = Vec::new();
    for message in rows {
        let subscribers = if message.record.message_type == MALFORMED_TYPE {
            Vec::new()
        } else {
            routes.subscribers_for(&message.record.message_type, message.record.inbox_tenant())
        };
        if subscribers.is_empty() {
            let reason = message
                .record
                .headers
                .extra
                .get(REJECTED_HEADER)
                .cloned()
                .unwrap_or_else(|| "rejected on reception".to_owned());
            outcomes.push(attempt::failure(
                message,
                config,
                FailureKind::Permanent,
                reason,
            ));
        } else {
            let mut record = message.record.clone();
            record.headers.extra.remove(REJECTED_HEADER);
            routed.push((record, subscribers, message));
        }
    }
    if routed.is_empty() {
        return outcomes;
    }
    let deliveries: Vec<Delivery<'_>> = routed
        .iter()
        .map(|(record, subscribers, _)| Delivery {
            record,
            subscribers,
        })
        .collect();
    match shared.store.receive(kind, &deliveries).await {
        Ok(report) => {
            tracing::info!(box = %box_kind, messages = routed.len(), inserted = report.inserted, "rejected messages routed to the subscriptions that exist now");
            if report.inserted > 0 {
                shared.store.wakers().wake(box_kind);
            }
            outcomes.extend(routed.iter().map(|(_, _, m)| attempt::success(m)));
        }
        Err(error) => {
            tracing::warn!(box = %box_kind, %error, "routing rejected messages failed: released, tried again later");
            outcomes.extend(routed.iter().map(|(_, _, m)| attempt::release(m)));
        }
    }
    outcomes
}
