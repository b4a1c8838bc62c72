//! The one-transaction relay of the in-process transport (a store capability, see
//! [`Store::relay`](bandeja_core::store::Store::relay)): routes, dedup, order, the report.

use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Delivery, Inspect};
use bandeja_core::subscriptions::{Registration, Subscription};
use bandeja_core::tenant::TenantId;

use super::{emit, ping, request, rows};

fn subscription(subscriber: &str, tenant: Option<TenantId>) -> Subscription {
    Subscription {
        kind: MessageKind::Event,
        message_type: "conformance.Ping".to_owned(),
        subscriber: subscriber.to_owned(),
        tenant,
    }
}

/// One inbox row per subscriber (a subscriber with an every-tenant and a tenant
/// subscription gets one), a key's rows in emission order; an existing row only counts a delivery; the
/// outbox rows end COMPLETED; the report counts all of it. (A store without the capability
/// answers `None` and passes.)
pub async fn relay_routes_each_subscriber_once_in_order_and_counts_duplicates<S: Inspect>(
    store: S,
) {
    let subscriptions = [
        subscription("a", None),
        subscription("a", Some(TenantId::default_tenant())),
        subscription("b", None),
    ];
    store
        .register(&Registration {
            process: "relay-check#1",
            service: "",
            host: "localhost",
            pid: 1,
            subscriptions: &subscriptions,
        })
        .await
        .expect("register the subscriptions");
    let records = [ping(1, "k1"), ping(2, "k1"), ping(3, "k2")];
    emit(&store, &records).await;
    let b = ["b".to_owned()];
    store
        .receive(
            MessageKind::Event,
            &[Delivery {
                record: &records[0],
                subscribers: &b,
            }],
        )
        .await
        .expect("an earlier delivery of the first message to b");
    let Some(report) = store
        .relay(MessageKind::Event, &request("relay-w", 10))
        .await
        .expect("relay")
    else {
        return;
    };
    // Ordered: the second message of k1 waits for the first, so two rows relay now.
    assert_eq!(
        (
            report.moved,
            report.inserted,
            report.duplicates,
            report.failed
        ),
        (2, 3, 1, 0),
        "{report:?}"
    );
    assert_eq!(report.published.len(), 2);
    assert!(report
        .published
        .iter()
        .all(|p| p.message_type == "conformance.Ping"));
    let second = store
        .relay(MessageKind::Event, &request("relay-w", 10))
        .await
        .expect("relay")
        .expect("the same store relays again");
    assert_eq!((second.moved, second.inserted), (1, 2), "{second:?}");

    let outbox = rows(&store, BoxKind::OutboxEvents).await;
    assert!(outbox
        .iter()
        .all(|r| r.message.status == MessageStatus::Completed && r.locked_by.is_none()));
    let inbox = rows(&store, BoxKind::InboxEvents).await;
    assert_eq!(inbox.len(), 6, "one row per message and subscriber");
    for subscriber in ["a", "b"] {
        let ids: Vec<_> = inbox
            .iter()
            .filter(|r| r.message.subscriber.as_deref() == Some(subscriber))
            .map(|r| r.message.record.id)
            .collect();
        // The order the relays took them in: k2 did not wait for k1's second message.
        let relayed = vec![records[0].id, records[2].id, records[1].id];
        assert_eq!(
            ids, relayed,
            "{subscriber}: in the order relayed, k1's in emission order"
        );
    }
    let first_to_b = inbox
        .iter()
        .find(|r| {
            r.message.record.id == records[0].id && r.message.subscriber.as_deref() == Some("b")
        })
        .expect("the first message's row of b");
    assert_eq!(first_to_b.message.delivery_count, 2);
    assert!(inbox
        .iter()
        .all(|r| r.message.status == MessageStatus::Pending
            && r.message.record.tenant_id == TenantId::default_tenant()
            && r.message.record.payload == records[0].payload
            || r.message.record.id != records[0].id));
}
