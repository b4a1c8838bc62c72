//! Per-key order through the broker: messages of one key arrive and are handled in order.

use bandeja_core::record::BoxKind;
use bandeja_core::store::Inspect;

use super::{completed, emit, stop, wait_rows, Harness, Seen};
use crate::fixtures::Ping;

/// Messages of one key reach the consumer's inbox in emission order (so its ordered
/// claims hand them to the handler in that order), whatever the partition count.
pub async fn messages_of_one_key_arrive_and_are_handled_in_order<S: Inspect>(h: Harness<S>) {
    let (orders, inventory) = (h.store().await, h.store().await);
    let seen = Seen::default();
    let consumer = h.service("inventory", &inventory, h.transport().await, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let consumer = consumer.start().await.expect("start the consumer");
    let producer = h.service("orders", &orders, h.transport().await, |b| b);
    let producer = producer.start().await.expect("start the producer");
    let keys = ["a", "b", "c", "d"];
    for round in 0..6u64 {
        emit(
            &orders,
            (0..20).map(|i| {
                (
                    round * 20 + i,
                    keys[usize::try_from(i).unwrap_or(0) % keys.len()].to_owned(),
                )
            }),
        )
        .await;
    }
    let inbox = wait_rows(
        &inventory,
        BoxKind::InboxEvents,
        "all handled",
        completed(120),
    )
    .await;
    stop(producer).await;
    stop(consumer).await;
    let mut by_seq = inbox.clone();
    by_seq.sort_by_key(|r| r.message.seq);
    for key in keys {
        let arrived: Vec<u64> = by_seq
            .iter()
            .filter(|r| r.message.record.partition_key.as_deref() == Some(key))
            .map(|r| {
                serde_json::from_str::<Ping>(&r.message.record.payload)
                    .map(|p| p.n)
                    .unwrap_or(u64::MAX)
            })
            .collect();
        assert!(
            arrived.windows(2).all(|w| w[0] < w[1]),
            "key {key} arrived in order: {arrived:?}"
        );
        let handled: Vec<u64> = seen
            .all()
            .into_iter()
            .filter(|s| s.1 == key)
            .map(|s| s.2)
            .collect();
        assert!(
            handled.windows(2).all(|w| w[0] < w[1]),
            "key {key} handled in order: {handled:?}"
        );
        assert_eq!(handled.len(), 30);
    }
}
