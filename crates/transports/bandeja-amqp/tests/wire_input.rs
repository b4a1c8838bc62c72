//! What only RabbitMQ shows: bodies published by another client, a broker that is not
//! there, options refused, commands nobody consumes yet, names too long, and a consumer
//! or publisher whose queue or exchange disappears under it.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bandeja_amqp::{AmqpError, AmqpOptions, AmqpTransport};
use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::envelope::{Command, Event, MessageId};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::reception::InboxSink;
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord};
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, ReceiveReport, Store};
use bandeja_core::tenant::{self, TenantId};
use bandeja_core::testing::eventually;
use bandeja_core::transport::{
    wire, Outgoing, SubscribeRequest, Transport, TransportError, TransportErrorKind,
};
use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, ExchangeDeleteOptions,
    QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, ExchangeKind};

/// A publish deadline far enough away for any test.
fn soon() -> bandeja_core::transport::Instant {
    bandeja_core::transport::Instant::now() + Duration::from_secs(30)
}

const WAIT: Duration = Duration::from_secs(60);

/// The ids of the events a handler saw.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<MessageId>>>);

impl<S: Store> EventHandler<S, Ping> for Seen {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        self.0.lock().expect("seen").push(event.id);
        Ok(())
    }
}

/// A sink that keeps the bodies it gets.
#[derive(Default)]
struct Recorder(Mutex<Vec<Vec<u8>>>);

impl Recorder {
    fn ids(&self) -> Vec<MessageId> {
        self.0
            .lock()
            .expect("bodies")
            .iter()
            .filter_map(|body| wire::decode(MessageKind::Event, body).ok())
            .map(|record| record.id)
            .collect()
    }

    fn commands(&self) -> Vec<MessageId> {
        self.0
            .lock()
            .expect("bodies")
            .iter()
            .filter_map(|body| wire::decode(MessageKind::Command, body).ok())
            .map(|record| record.id)
            .collect()
    }
}

#[async_trait]
impl InboxSink for Recorder {
    async fn accept(
        &self,
        _kind: MessageKind,
        bodies: &[&[u8]],
    ) -> bandeja_core::Result<ReceiveReport> {
        let mut kept = self.0.lock().expect("bodies");
        kept.extend(bodies.iter().map(|body| body.to_vec()));
        Ok(ReceiveReport {
            inserted: u64::try_from(bodies.len()).unwrap_or(u64::MAX),
            duplicates: 0,
        })
    }
}

fn ping(n: u64) -> MessageRecord {
    MessageRecord::from_event(&Event::new("Ping", format!("k{n}"), Ping { n })).expect("record")
}

fn outgoing(record: &MessageRecord, address: &'static str, partition: u16) -> Outgoing<'static> {
    let record: &'static MessageRecord = Box::leak(Box::new(record.clone()));
    Outgoing {
        record,
        address,
        partition,
        body: wire::encode(record, Some("test")),
    }
}

fn request(kind: MessageKind, service: &str, address: &str) -> SubscribeRequest {
    SubscribeRequest {
        kind,
        service: service.to_owned(),
        addresses: vec![address.to_owned()],
        batch_size: 10,
    }
}

fn amqp_error(error: &TransportError) -> &AmqpError {
    error
        .get_ref()
        .downcast_ref::<AmqpError>()
        .unwrap_or_else(|| panic!("an AmqpError: {error:?}"))
}

/// Bodies that are not JSON, lack an id, name a type nobody here handles or a schema
/// version the handler does not read, published by RabbitMQ's own client, are stored as
/// FAILED inbox rows with the reason, and the message published after them is handled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_from_another_client_are_stored_failed_and_do_not_block() {
    let namespace = common::namespace();
    let (store, _dir) = common::fresh_store().await;
    let seen = Seen::default();
    let service = Bandeja::builder(store.clone())
        .config(fast_config())
        .service("inventory")
        .transport(common::amqp(namespace.clone()).await)
        .on_event::<Ping, _>("stock", seen.clone())
        .build()
        .expect("build the service");
    let running = service.start().await.expect("start");

    let good = ping(1);
    let mut unknown = ping(2);
    unknown.message_type = "conformance.Unknown".into();
    let mut newer = ping(3);
    newer.schema_version = 9;
    // A newer version that changed a field's type (one that only added fields is read).
    newer.payload = r#"{"n":"three"}"#.into();
    let bodies: Vec<Vec<u8>> = vec![
        b"this is not json".to_vec(),
        br#"{"bandeja":1,"kind":"event","type":"conformance.Ping"}"#.to_vec(),
        wire::encode(&unknown, Some("rogue")),
        wire::encode(&newer, Some("rogue")),
        wire::encode(&good, Some("rogue")),
    ];
    let connection = common::raw_connection().await;
    let channel = connection.create_channel().await.expect("channel");
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .expect("confirms");
    let exchange = format!("{namespace}.events");
    for body in &bodies {
        let confirmation = channel
            .basic_publish(
                exchange.as_str().into(),
                "p0.conformance.Ping".into(),
                BasicPublishOptions::default(),
                body,
                BasicProperties::default(),
            )
            .await
            .expect("publish")
            .await
            .expect("confirmation");
        assert!(confirmation.is_ack());
    }

    let rows = eventually(WAIT, || async {
        let rows = store.rows(BoxKind::InboxEvents).await.expect("rows");
        let settled = rows.len() == 5
            && rows.iter().all(|r| {
                matches!(
                    r.message.status,
                    MessageStatus::Completed | MessageStatus::Failed
                )
            });
        settled.then_some(rows)
    })
    .await
    .expect("five inbox rows settled");
    running.shutdown_within(Duration::from_secs(10)).await;
    let _ = connection.close(200, "done".into()).await;

    assert_eq!(*seen.0.lock().expect("seen"), vec![good.id]);
    let completed: Vec<MessageId> = rows
        .iter()
        .filter(|r| r.message.status == MessageStatus::Completed)
        .map(|r| r.message.record.id)
        .collect();
    assert_eq!(completed, vec![good.id], "the good message was handled");
    let reasons: BTreeMap<i64, String> = rows
        .iter()
        .filter(|r| r.message.status == MessageStatus::Failed)
        .map(|r| {
            (
                r.message.seq,
                r.message.last_error.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 4, "{reasons:#?}");
    let all = reasons.values().cloned().collect::<Vec<_>>().join("\n");
    for expected in [
        "not JSON",
        "not a bandeja message",
        "no subscriber for event type `conformance.Unknown`",
        "schema version 9",
    ] {
        assert!(all.contains(expected), "a row says {expected:?}:\n{all}");
    }
}

/// A broker that is not there fails `connect` at once, saying where it looked.
#[tokio::test]
async fn connecting_where_nothing_listens_fails_quickly_and_says_where() {
    let started = Instant::now();
    let error = AmqpTransport::connect(
        AmqpOptions::default()
            .url("amqp://guest:secret@127.0.0.1:1/%2f")
            .connect_timeout(Duration::from_secs(3)),
    )
    .await
    .expect_err("nothing listens on port 1");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.kind(), TransportErrorKind::Unavailable);
    assert!(
        matches!(
            amqp_error(&error),
            AmqpError::Connect { .. } | AmqpError::ConnectTimeout { .. }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("cannot connect to RabbitMQ at amqp://guest@127.0.0.1:1/%2f"),
        "{message}"
    );
    assert!(
        !message.contains("secret"),
        "the password is not shown: {message}"
    );
}

/// Options that cannot work are refused before connecting, naming the option.
#[tokio::test]
async fn invalid_options_are_rejected_naming_the_option() {
    let cases = [
        (AmqpOptions::default().partitions(0), "`partitions`"),
        (AmqpOptions::default().prefix(""), "`prefix`"),
        (AmqpOptions::default().prefix("has space"), "`prefix`"),
        (AmqpOptions::default().url("http://127.0.0.1"), "`url`"),
        (AmqpOptions::default().url("amqps://127.0.0.1/%2f"), "TLS"),
        (
            AmqpOptions::default().connect_timeout(Duration::ZERO),
            "`connect_timeout`",
        ),
    ];
    for (options, expected) in cases {
        let error = AmqpTransport::connect(options)
            .await
            .expect_err("invalid options");
        assert_eq!(error.kind(), TransportErrorKind::Rejected, "{error}");
        assert!(
            matches!(amqp_error(&error), AmqpError::InvalidOptions(_)),
            "{error:?}"
        );
        assert!(
            error.to_string().contains(expected),
            "{error} names {expected}"
        );
    }
}

/// A command for a topic no queue is bound to comes back: rejected (a failed attempt, see
/// `tests/unroutable.rs`), not Ok; once the consuming service subscribed, it goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_nobody_consumes_yet_is_rejected_until_a_queue_is_bound() {
    let namespace = common::namespace();
    let transport = common::transport(&namespace).await;
    let command = tenant::sync_scope(TenantId::new("acme").expect("tenant"), || {
        Command::to_self("billing", Ping { n: 1 })
    })
    .expect("command");
    let record = MessageRecord::from_command(&command).expect("record");
    let message = outgoing(&record, "billing-commands", 2);

    let results = transport
        .publish(MessageKind::Command, std::slice::from_ref(&message), soon())
        .await;
    let error = results[0].as_ref().expect_err("returned");
    assert_eq!(error.kind(), TransportErrorKind::Rejected, "{error}");
    assert!(
        matches!(amqp_error(error), AmqpError::Unroutable { routing_key, .. } if routing_key == "p2.billing-commands"),
        "{error:?}"
    );

    let recorder = Arc::new(Recorder::default());
    let subscription = transport
        .subscribe(
            request(MessageKind::Command, "billing", "billing-commands"),
            recorder.clone(),
        )
        .await
        .expect("subscribe");
    let results = transport
        .publish(MessageKind::Command, std::slice::from_ref(&message), soon())
        .await;
    assert!(results[0].is_ok(), "{results:?}");
    eventually(WAIT, || async {
        (recorder.commands() == vec![record.id]).then_some(())
    })
    .await
    .expect("the command arrived");
    subscription.stop().await;
}

/// A routing key longer than AMQP allows is rejected for that message only; the others of
/// the call go, and the results keep the call's order.
#[tokio::test]
async fn a_routing_key_over_255_bytes_is_rejected_alone() {
    let namespace = common::namespace();
    let transport = common::transport(&namespace).await;
    let long: &'static str = Box::leak("t".repeat(254).into_boxed_str());
    let (a, b, c) = (ping(1), ping(2), ping(3));
    let results = transport
        .publish(
            MessageKind::Event,
            &[
                outgoing(&a, "conformance.Ping", 0),
                outgoing(&b, long, 1),
                outgoing(&c, "conformance.Ping", 3),
            ],
            soon(),
        )
        .await;
    assert_eq!(results.len(), 3);
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    let error = results[1].as_ref().expect_err("too long");
    assert_eq!(error.kind(), TransportErrorKind::Rejected);
    assert!(
        matches!(amqp_error(error), AmqpError::NameTooLong { len: 257, .. }),
        "{error:?}"
    );
    let beyond = transport
        .publish(
            MessageKind::Event,
            &[outgoing(&a, "conformance.Ping", 4)],
            soon(),
        )
        .await;
    assert!(
        matches!(&beyond[0], Err(e) if e.kind() == TransportErrorKind::Rejected),
        "partition 4 of 4: {beyond:?}"
    );
}

/// Publishes a new event (to `partitions` in turn) each round until one of those
/// published this way reached `recorder`: while a queue is missing, events are dropped.
async fn publish_until_one_arrives(
    transport: &AmqpTransport,
    recorder: &Recorder,
    partitions: &[u16],
) {
    let sent = Mutex::new(Vec::new());
    let mut n = 100u64;
    eventually(WAIT, || {
        n += 1;
        let record = ping(n);
        let partition = partitions[usize::try_from(n).unwrap_or(0) % partitions.len()];
        let sent = &sent;
        async move {
            let arrived = recorder.ids();
            if sent
                .lock()
                .expect("sent")
                .iter()
                .any(|id| arrived.contains(id))
            {
                return Some(());
            }
            let results = transport
                .publish(
                    MessageKind::Event,
                    &[outgoing(&record, "conformance.Ping", partition)],
                    soon(),
                )
                .await;
            if results[0].is_ok() {
                sent.lock().expect("sent").push(record.id);
            }
            None
        }
    })
    .await
    .expect("an event published now reached the consumer");
}

/// A consumer whose queue is deleted under it declares it again, binds it and consumes
/// again; the messages published after that arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_whose_queue_is_deleted_declares_it_again() {
    let namespace = common::namespace();
    let transport = common::transport(&namespace).await;
    let recorder = Arc::new(Recorder::default());
    let subscription = transport
        .subscribe(
            request(MessageKind::Event, "inventory", "conformance.Ping"),
            recorder.clone(),
        )
        .await
        .expect("subscribe");
    let before = ping(0);
    let results = transport
        .publish(
            MessageKind::Event,
            &[outgoing(&before, "conformance.Ping", 1)],
            soon(),
        )
        .await;
    assert!(results[0].is_ok(), "{results:?}");
    eventually(WAIT, || async {
        recorder.ids().contains(&before.id).then_some(())
    })
    .await
    .expect("delivered before the deletion");

    let connection = common::raw_connection().await;
    let channel = connection.create_channel().await.expect("channel");
    channel
        .queue_delete(
            format!("{namespace}.inventory.events.p1").as_str().into(),
            QueueDeleteOptions::default(),
        )
        .await
        .expect("delete the queue");
    let _ = connection.close(200, "done".into()).await;

    // Until the consumer declared its queue again, events to partition 1 have no queue
    // and are dropped.
    publish_until_one_arrives(&transport, &recorder, &[1]).await;
    subscription.stop().await;
}

/// A publisher whose exchange is deleted under it fails that publish as unavailable,
/// reconnects on a later one and declares the exchange again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publisher_whose_exchange_is_deleted_declares_it_again() {
    let namespace = common::namespace();
    let transport = common::transport(&namespace).await;
    let exchange = format!("{namespace}.events");
    let connection = common::raw_connection().await;
    let channel = connection.create_channel().await.expect("channel");
    channel
        .exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default())
        .await
        .expect("delete the exchange");

    let outcomes = Mutex::new(Vec::new());
    let mut n = 0;
    eventually(WAIT, || {
        n += 1;
        let record = ping(n);
        let (transport, outcomes) = (&transport, &outcomes);
        async move {
            let results = transport
                .publish(
                    MessageKind::Event,
                    &[outgoing(&record, "conformance.Ping", 0)],
                    soon(),
                )
                .await;
            let ok = results[0].is_ok();
            let outcome = results.into_iter().next().expect("one result");
            outcomes
                .lock()
                .expect("outcomes")
                .push(outcome.map_err(|e| e.kind()));
            ok.then_some(())
        }
    })
    .await
    .expect("publishing works again");
    let outcomes = outcomes.into_inner().expect("outcomes");
    assert_eq!(
        outcomes.first(),
        Some(&Err(TransportErrorKind::Unavailable)),
        "the first publish found no exchange: {outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Ok(()) | Err(TransportErrorKind::Unavailable))),
        "{outcomes:?}"
    );
    channel
        .exchange_declare(
            exchange.as_str().into(),
            ExchangeKind::Direct,
            ExchangeDeclareOptions {
                passive: true,
                ..ExchangeDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .expect("the exchange exists again");
    // Declared again by the publisher, it never had a queue: auto-delete never fires.
    channel
        .exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default())
        .await
        .expect("clean up the exchange");
    let _ = connection.close(200, "done".into()).await;
}

/// Closes, with `rabbitmqctl`, every connection whose client-given name mentions
/// `namespace` (only this test's); returns how many it closed.
fn close_connections_of(namespace: &str) -> usize {
    let listed = std::process::Command::new("rabbitmqctl")
        .args([
            "list_connections",
            "-q",
            "--no-table-headers",
            "pid",
            "client_properties",
        ])
        .output()
        .expect("run rabbitmqctl (it comes with RabbitMQ)");
    assert!(
        listed.status.success(),
        "rabbitmqctl list_connections: {listed:?}"
    );
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let pids: Vec<&str> = listed
        .lines()
        .filter(|line| line.contains(namespace))
        .filter_map(|line| line.split('\t').next())
        .collect();
    for pid in &pids {
        let closed = std::process::Command::new("rabbitmqctl")
            .args([
                "close_connection",
                pid,
                "bandeja-amqp test: simulated outage",
            ])
            .output()
            .expect("run rabbitmqctl");
        assert!(
            closed.status.success(),
            "rabbitmqctl close_connection: {closed:?}"
        );
    }
    pids.len()
}

/// When the broker closes the connections of the publisher and of a subscription, the
/// next publishes reconnect and the consumers reconnect and consume again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publisher_and_consumers_reconnect_after_the_broker_closed_their_connections() {
    let namespace = common::namespace();
    let transport = common::transport(&namespace).await;
    let recorder = Arc::new(Recorder::default());
    let subscription = transport
        .subscribe(
            request(MessageKind::Event, "inventory", "conformance.Ping"),
            recorder.clone(),
        )
        .await
        .expect("subscribe");
    let before = ping(0);
    let results = transport
        .publish(
            MessageKind::Event,
            &[outgoing(&before, "conformance.Ping", 2)],
            soon(),
        )
        .await;
    assert!(results[0].is_ok(), "{results:?}");
    eventually(WAIT, || async {
        recorder.ids().contains(&before.id).then_some(())
    })
    .await
    .expect("delivered before the outage");

    let closed = tokio::task::spawn_blocking({
        let namespace = namespace.clone();
        move || close_connections_of(&namespace)
    })
    .await
    .expect("rabbitmqctl");
    assert_eq!(
        closed, 2,
        "the publisher's and the subscription's connections"
    );

    publish_until_one_arrives(&transport, &recorder, &[0, 1, 2, 3]).await;
    subscription.stop().await;
}

/// A transport shows its options in `Debug`, without the password.
#[tokio::test]
async fn debug_output_leaves_the_password_out() {
    let transport = common::transport(&common::namespace()).await;
    let shown = format!("{transport:?}");
    assert!(shown.contains("prefix"), "{shown}");
    assert!(!shown.contains("guest:guest"), "{shown}");
}
