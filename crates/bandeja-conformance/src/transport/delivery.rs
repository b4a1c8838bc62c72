//! Delivery between services: each event once to each subscribing service, headers intact,
//! commands to the service their topic names.

use bandeja_core::envelope::{Command, Event, MessageId};
use bandeja_core::error::Error;
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView, Store};
use bandeja_core::tenant::{self, TenantId};

use super::{completed, emit, rows, stop, wait_rows, Harness, Seen};
use crate::fixtures::outbox_of;
use crate::fixtures::{Archive, Ping};

/// Every event reaches every subscribing service once; the publisher's outbox rows are
/// COMPLETED only once the broker took them.
pub async fn publishes_and_delivers_once_to_each_subscribing_service<S: Inspect>(h: Harness<S>) {
    let (orders, inventory, billing) = (h.store().await, h.store().await, h.store().await);
    let (seen_inventory, seen_billing) = (Seen::default(), Seen::default());
    let consumers = [
        h.service("inventory", &inventory, h.transport().await, |b| {
            b.on_event::<Ping, _>("stock", seen_inventory.clone())
        }),
        h.service("billing", &billing, h.transport().await, |b| {
            b.on_event::<Ping, _>("invoice", seen_billing.clone())
        }),
    ];
    let mut running = Vec::new();
    for consumer in &consumers {
        running.push(consumer.start().await.expect("start a consumer"));
    }
    let producer = h.service("orders", &orders, h.transport().await, |b| b);
    running.push(producer.start().await.expect("start the producer"));
    let mut ids = emit(&orders, (0..30).map(|n| (n, format!("k{}", n % 5)))).await;
    ids.sort();
    wait_rows(
        &orders,
        BoxKind::OutboxEvents,
        "all published",
        completed(30),
    )
    .await;
    for store in [&inventory, &billing] {
        wait_rows(store, BoxKind::InboxEvents, "all handled", completed(30)).await;
    }
    for running in running {
        stop(running).await;
    }
    assert_eq!(
        seen_inventory.ids(),
        ids,
        "inventory handled each event once"
    );
    assert_eq!(seen_billing.ids(), ids, "billing handled each event once");
}

/// Correlation id, causation id, `traceparent`, application headers and the source
/// service arrive as they left.
pub async fn headers_arrive_intact<S: Inspect>(h: Harness<S>) {
    let (orders, inventory) = (h.store().await, h.store().await);
    let consumer = h.service("inventory", &inventory, h.transport().await, |b| {
        b.on_event::<Ping, _>("stock", Seen::default())
    });
    let consumer = consumer.start().await.expect("start the consumer");
    let producer = h.service("orders", &orders, h.transport().await, |b| b);
    let producer = producer.start().await.expect("start the producer");
    let cause = MessageId::new();
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut event = Event::new("Ping", "k", Ping { n: 1 })
        .with_correlation_id("order-42")
        .with_header("x-note", "ñandú \"quoted\"");
    event.causation_id = Some(cause);
    event.headers.traceparent = Some(traceparent.to_owned());
    producer_emit(&orders, &event).await;
    let inbox = wait_rows(&inventory, BoxKind::InboxEvents, "handled", completed(1)).await;
    stop(producer).await;
    stop(consumer).await;
    let headers = &inbox[0].message.record.headers;
    assert_eq!(headers.correlation_id.as_deref(), Some("order-42"));
    assert_eq!(headers.causation_id, Some(cause));
    assert_eq!(headers.traceparent.as_deref(), Some(traceparent));
    assert_eq!(headers.source_service.as_deref(), Some("orders"));
    assert_eq!(
        headers.extra.get("x-note").map(String::as_str),
        Some("ñandú \"quoted\"")
    );
    assert_eq!(inbox[0].message.record.id, event.id);
}

async fn producer_emit<S: Store>(store: &S, event: &Event<Ping>) {
    let outbox = outbox_of(store);
    let mut tx = store.begin().await.expect("begin");
    outbox.emit(&mut *tx, event).await.expect("emit");
    store.commit(tx).await.expect("commit");
}

/// A command goes to the topic `commands.topics` names for its target service, and only
/// that service handles it; a command to a service without a topic is refused when sent,
/// and FAILED with the same reason if it reaches the outbox another way.
pub async fn commands_reach_the_service_their_topic_names<S: Inspect>(h: Harness<S>) {
    let (orders, billing, shipping) = (h.store().await, h.store().await, h.store().await);
    let (seen_billing, seen_shipping) = (Seen::default(), Seen::default());
    let mut running = vec![
        h.service("billing", &billing, h.transport().await, |b| {
            b.on_command::<Archive, _>("archiver", seen_billing.clone())
        })
        .start()
        .await
        .expect("start billing"),
        h.service("shipping", &shipping, h.transport().await, |b| {
            b.on_command::<Archive, _>("archiver", seen_shipping.clone())
        })
        .start()
        .await
        .expect("start shipping"),
    ];
    let producer = h.service("orders", &orders, h.transport().await, |b| b);
    running.push(producer.start().await.expect("start the producer"));
    let acme = TenantId::new("acme").expect("tenant");
    let mut ids = Vec::new();
    for n in 0..5 {
        let command = tenant::scope(acme.clone(), async {
            Command::to_self("billing", Archive { n })
        })
        .await
        .expect("command");
        ids.push(command.id);
        producer.send(&command).await.expect("send");
    }
    ids.sort();
    let lost = tenant::scope(acme.clone(), async {
        Command::to_self("nowhere", Archive { n: 9 })
    })
    .await
    .expect("command");
    let refused = producer.send(&lost).await;
    assert!(
        matches!(&refused, Err(Error::NoRoute(e)) if e.service() == "nowhere"),
        "{refused:?}"
    );
    let mut tx = orders.begin().await.expect("begin");
    outbox_of(&orders)
        .send(&mut *tx, &lost)
        .await
        .expect("written through the outbox");
    orders.commit(tx).await.expect("commit");
    wait_rows(&billing, BoxKind::InboxCommands, "handled", completed(5)).await;
    let outbox = wait_rows(&orders, BoxKind::OutboxCommands, "settled", |rows| {
        rows.len() == 6
            && rows.iter().all(|r| {
                matches!(
                    r.message.status,
                    MessageStatus::Completed | MessageStatus::Failed
                )
            })
    })
    .await;
    for running in running {
        stop(running).await;
    }
    let failed: Vec<&RowView> = outbox
        .iter()
        .filter(|r| r.message.status == MessageStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].message.record.id, lost.id);
    assert!(failed[0]
        .message
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("[commands.topics] nowhere")));
    assert_eq!(seen_billing.ids(), ids);
    assert!(
        seen_shipping.all().is_empty(),
        "shipping consumes its own topic only"
    );
    assert!(rows(&shipping, BoxKind::InboxCommands).await.is_empty());
}
