//! Deliveries that never reached a store (a process killed with a batch in hand, a pull
//! whose answer was lost) must not let later messages of their key be stored first:
//! JetStream would hand them out again only after `ack_wait`, behind the later ones.

mod common;

use std::time::Duration;

use async_nats::jetstream::{self, consumer::PullConsumer};
use bandeja_core::transport::wire;
use bandeja_core::MessageKind;
use futures::StreamExt;

use common::inventory::{ping, publish_one, start_inventory, Seen};
use common::{fresh_store, namespace, options, partition_consumer, Streams, URL};

/// Longer than the test may take: a delivery left to expire would come back too late.
const ACK_WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_a_killed_process_held_is_handled_before_the_messages_after_it() {
    let (store, _dir) = fresh_store().await;
    let transport = bandeja_nats::NatsTransport::connect(
        options(&namespace()).partitions(1).ack_wait(ACK_WAIT),
    )
    .await
    .expect("connect");
    let _streams = Streams::of(&transport);
    let seen = Seen::default();
    // A first run creates the service's consumer, then stops.
    start_inventory(&store, &transport, &seen)
        .await
        .shutdown_within(Duration::from_secs(10))
        .await;

    // Five pings of one key; a process (the raw client here) takes the first two in a pull
    // and dies before storing or acknowledging them.
    let pings: Vec<_> = (1..=5).map(ping).collect();
    for record in &pings[..3] {
        publish_one(&transport, record, 0, wire::encode(record, None))
            .await
            .expect("published");
    }
    let stream = transport.stream(MessageKind::Event);
    let name = partition_consumer(&stream, "inventory_events_p0").await;
    let client = async_nats::connect(URL).await.expect("connect");
    let consumer: PullConsumer = jetstream::new(client)
        .get_consumer_from_stream(&name, &stream)
        .await
        .expect("the service's consumer");
    let mut taken = consumer
        .fetch()
        .max_messages(2)
        .messages()
        .await
        .expect("pull");
    let mut held = 0;
    while let Some(message) = taken.next().await {
        message.expect("a delivery");
        held += 1;
    }
    assert_eq!(held, 2, "the killed process held two deliveries");
    for record in &pings[3..] {
        publish_one(&transport, record, 0, wire::encode(record, None))
            .await
            .expect("published");
    }

    // The next process of the service handles all five, in emission order, well before
    // the two held deliveries would expire.
    let count = pings.len();
    let running = start_inventory(&store, &transport, &seen).await;
    // Well inside `ACK_WAIT`: the two held deliveries must not wait for it to expire.
    let handled = bandeja_core::testing::eventually(ACK_WAIT / 3, || {
        let ids = seen.ids();
        async move { (ids.len() >= count).then_some(ids) }
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "all five handled before the held deliveries would expire: {e}; handled {:?}",
            seen.ids()
        )
    });
    running.shutdown_within(Duration::from_secs(10)).await;
    let expected: Vec<_> = pings.iter().map(|p| p.id).collect();
    assert_eq!(handled, expected, "handled once each, in emission order");
}
