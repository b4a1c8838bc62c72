//! What arrives from outside bandeja (another client publishing on a subscribed subject), a
//! server that is not there, streams and consumers that vanish, and options that cannot
//! work: each gives a clear outcome, none blocks or panics.

mod common;

use std::time::{Duration, Instant};

use async_nats::jetstream;
use bandeja_conformance::fixtures::Ping;
use bandeja_core::store::{Inspect, RowView};
use bandeja_core::testing::eventually;
use bandeja_core::transport::{wire, TransportErrorKind};
use bandeja_core::{BoxKind, MessageKind, MessageStatus, Payload};
use bandeja_nats::{NatsError, NatsOptions, NatsTransport, OptionsError};
use bandeja_sqlite::SqliteStore;

use common::inventory::{ping, publish_one, start_inventory, Seen, WAIT};
use common::{fresh_store, namespace, options, partition_consumer, Streams, URL};

/// Publishes bodies with the broker's own client, waiting for each acknowledgement.
async fn publish_raw(subject: &str, bodies: Vec<Vec<u8>>) {
    let client = async_nats::connect(URL).await.expect("connect");
    let jetstream = jetstream::new(client);
    for body in bodies {
        jetstream
            .publish(subject.to_owned(), body.into())
            .await
            .expect("send")
            .await
            .expect("acknowledged");
    }
}

async fn wait_rows(
    store: &SqliteStore,
    what: &str,
    done: impl Fn(&[RowView]) -> bool,
) -> Vec<RowView> {
    eventually(WAIT, || async {
        let rows = store.rows(BoxKind::InboxEvents).await.expect("rows");
        done(&rows).then_some(rows)
    })
    .await
    .unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn settled(rows: &[RowView]) -> bool {
    rows.iter().all(|r| {
        matches!(
            r.message.status,
            MessageStatus::Completed | MessageStatus::Failed
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_from_another_client_are_stored_failed_and_the_next_is_handled() {
    let (store, _dir) = fresh_store().await;
    let transport = NatsTransport::connect(options(&namespace()))
        .await
        .expect("connect");
    let _streams = Streams::of(&transport);
    let seen = Seen::default();
    let running = start_inventory(&store, &transport, &seen).await;

    let good = ping(1);
    let mut unknown = ping(2);
    unknown.message_type = "conformance.Unknown".into();
    let mut newer = ping(3);
    newer.schema_version = 9;
    // A newer version that changed a field's type (one that only added fields is read).
    newer.payload = r#"{"n":"three"}"#.into();
    let bodies = vec![
        b"this is not json".to_vec(),
        br#"{"bandeja":1,"kind":"event","type":"conformance.Ping"}"#.to_vec(),
        wire::encode(&unknown, Some("rogue")),
        wire::encode(&newer, Some("rogue")),
    ];
    let subject = transport.subject(MessageKind::Event, 0, Ping::TYPE);
    publish_raw(&subject, bodies).await;
    // A type this service does not consume, on the same partition: acknowledged, not stored.
    let mut other = ping(4);
    other.message_type = "other.Thing".into();
    publish_raw(
        &transport.subject(MessageKind::Event, 0, "other.Thing"),
        vec![wire::encode(&other, Some("rogue"))],
    )
    .await;
    publish_raw(&subject, vec![wire::encode(&good, Some("rogue"))]).await;

    let inbox = wait_rows(&store, "five rows settled", |rows| {
        rows.len() == 5 && settled(rows)
    })
    .await;
    eventually(WAIT, || async { (seen.ids() == [good.id]).then_some(()) })
        .await
        .expect("the good message handled");
    running.shutdown_within(Duration::from_secs(10)).await;

    let rows = store.rows(BoxKind::InboxEvents).await.expect("rows");
    assert_eq!(rows.len(), 5, "the other type was not stored");
    assert!(inbox.iter().all(|r| r.message.record.id != other.id));
    let failed: Vec<String> = inbox
        .iter()
        .filter(|r| r.message.status == MessageStatus::Failed)
        .map(|r| r.message.last_error.clone().unwrap_or_default())
        .collect();
    assert_eq!(failed.len(), 4, "{failed:#?}");
    let all = failed.join("\n");
    for expected in [
        "not JSON",
        "not a bandeja message",
        "no subscriber for event type `conformance.Unknown`",
        "schema version 9",
    ] {
        assert!(all.contains(expected), "a row says {expected:?}:\n{all}");
    }
    let handled: Vec<&RowView> = inbox
        .iter()
        .filter(|r| r.message.status == MessageStatus::Completed)
        .collect();
    assert_eq!(handled.len(), 1);
    assert_eq!(handled[0].message.record.id, good.id);
}

#[tokio::test]
async fn connecting_to_a_server_that_is_not_listening_fails_quickly_and_clearly() {
    let started = Instant::now();
    let error = NatsTransport::connect(
        NatsOptions::new("nats://127.0.0.1:1").connect_timeout(Duration::from_secs(2)),
    )
    .await
    .expect_err("nothing listens on port 1");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.kind(), TransportErrorKind::Unavailable);
    let text = error.to_string();
    assert!(text.contains("nats://127.0.0.1:1"), "{text}");
    assert!(
        matches!(
            error.get_ref().downcast_ref::<NatsError>(),
            Some(NatsError::Connect { .. })
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn invalid_options_are_refused_before_connecting() {
    for (options, expected) in [
        (
            NatsOptions::default().partitions(0),
            OptionsError::NoPartitions,
        ),
        (
            NatsOptions::default().prefix("my.app"),
            OptionsError::Prefix {
                prefix: "my.app".into(),
                suggestion: "my_app".into(),
            },
        ),
        (
            NatsOptions::default().ack_wait(Duration::ZERO),
            OptionsError::Duration { field: "ack_wait" },
        ),
    ] {
        let error = NatsTransport::connect(options.url("nats://127.0.0.1:1"))
            .await
            .expect_err("invalid");
        assert_eq!(error.kind(), TransportErrorKind::Rejected);
        match error.get_ref().downcast_ref::<NatsError>() {
            Some(NatsError::Options(found)) => assert_eq!(found, &expected),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn refused_messages_are_rejected_and_a_missing_stream_is_declared_again() {
    let transport = NatsTransport::connect(options(&namespace()))
        .await
        .expect("connect");
    let _streams = Streams::of(&transport);
    let record = ping(1);
    let body = wire::encode(&record, None);

    let out_of_range = publish_one(&transport, &record, 4, body.clone())
        .await
        .expect_err("partition 4 of 4");
    assert_eq!(out_of_range.kind(), TransportErrorKind::Rejected);
    let too_large = publish_one(&transport, &record, 0, vec![b' '; 8 * 1024 * 1024])
        .await
        .expect_err("larger than the server's max_payload");
    assert_eq!(
        too_large.kind(),
        TransportErrorKind::Rejected,
        "{too_large}"
    );

    let client = async_nats::connect(URL).await.expect("connect");
    jetstream::new(client)
        .delete_stream(transport.stream(MessageKind::Event))
        .await
        .expect("delete the stream");
    let missing = publish_one(&transport, &record, 0, body.clone())
        .await
        .expect_err("no stream");
    assert_eq!(missing.kind(), TransportErrorKind::Unavailable, "{missing}");
    publish_one(&transport, &record, 0, body)
        .await
        .expect("the stream was declared again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_deleted_on_the_server_is_created_again() {
    let (store, _dir) = fresh_store().await;
    let transport = NatsTransport::connect(options(&namespace()).partitions(1))
        .await
        .expect("connect");
    let _streams = Streams::of(&transport);
    let seen = Seen::default();
    let running = start_inventory(&store, &transport, &seen).await;
    let first = ping(1);
    publish_one(&transport, &first, 0, wire::encode(&first, None))
        .await
        .expect("published");
    wait_rows(&store, "the first handled", |rows| {
        rows.len() == 1 && settled(rows)
    })
    .await;

    let stream = transport.stream(MessageKind::Event);
    let name = partition_consumer(&stream, "inventory_events_p0").await;
    let client = async_nats::connect(URL).await.expect("connect");
    jetstream::new(client)
        .delete_consumer_from_stream(&name, &stream)
        .await
        .expect("delete the consumer");
    let second = ping(2);
    publish_one(&transport, &second, 0, wire::encode(&second, None))
        .await
        .expect("published");
    wait_rows(
        &store,
        "the second handled by the recreated consumer",
        |rows| rows.len() == 2 && settled(rows),
    )
    .await;
    running.shutdown_within(Duration::from_secs(10)).await;
    let mut ids = seen.ids();
    ids.sort();
    let mut expected = vec![first.id, second.id];
    expected.sort();
    assert_eq!(ids, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_published_twice_is_dropped_by_the_broker_the_second_time() {
    let (store, _dir) = fresh_store().await;
    let transport = NatsTransport::connect(options(&namespace()))
        .await
        .expect("connect");
    let _streams = Streams::of(&transport);
    let seen = Seen::default();
    let running = start_inventory(&store, &transport, &seen).await;
    let twice = ping(1);
    for _ in 0..2 {
        publish_one(&transport, &twice, 0, wire::encode(&twice, None))
            .await
            .expect("acknowledged, the second time as a duplicate");
    }
    // Published after both on the same partition: once it is stored, any copy would be too.
    let after = ping(2);
    publish_one(&transport, &after, 0, wire::encode(&after, None))
        .await
        .expect("published");
    let inbox = wait_rows(&store, "both handled", |rows| {
        rows.len() == 2 && settled(rows)
    })
    .await;
    running.shutdown_within(Duration::from_secs(10)).await;
    let first = inbox
        .iter()
        .find(|r| r.message.record.id == twice.id)
        .expect("stored");
    assert_eq!(
        first.message.delivery_count, 1,
        "the copy never reached the consumer"
    );
    assert_eq!(seen.ids().len(), 2);
}
