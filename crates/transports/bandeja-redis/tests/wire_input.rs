//! What only Redis shows: entries added by another client (bad bodies, missing fields,
//! bytes that are not text), a server that is not there, options refused, a partition
//! count that differs, a key of the prefix holding something else, messages published
//! before their consumer group exists, and connections the server closes. Against the
//! local Redis (a server that is not there fails the test).

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
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
use bandeja_redis::{RedisError, RedisOptions, RedisTransport};

const WAIT: Duration = Duration::from_secs(60);

/// A publish deadline far enough away for any test.
fn soon() -> bandeja_core::transport::Instant {
    bandeja_core::transport::Instant::now() + Duration::from_secs(30)
}

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
    fn ids(&self, kind: MessageKind) -> Vec<MessageId> {
        self.0
            .lock()
            .expect("bodies")
            .iter()
            .filter_map(|body| wire::decode(kind, body).ok())
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

fn outgoing<'a>(record: &'a MessageRecord, address: &'a str, partition: u16) -> Outgoing<'a> {
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

fn redis_error(error: &TransportError) -> &RedisError {
    error
        .get_ref()
        .downcast_ref::<RedisError>()
        .unwrap_or_else(|| panic!("a RedisError: {error:?}"))
}

/// Entries added by another client — a body that is not JSON, one that is not a message,
/// a type nobody here handles, an entry without a `body` field, one whose field names and
/// body are not text — are stored as FAILED inbox rows with the reason, and the message
/// added after them is handled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_entries_from_another_client_are_stored_failed_and_do_not_block() {
    let prefix = common::namespace();
    let (store, _dir) = common::fresh_store().await;
    let seen = Seen::default();
    let running = Bandeja::builder(store.clone())
        .config(fast_config())
        .service("inventory")
        .transport(common::transport(&prefix).await)
        .on_event::<Ping, _>("stock", seen.clone())
        .build()
        .expect("build the service")
        .start()
        .await
        .expect("start");

    let good = ping(1);
    let mut unknown = ping(2);
    unknown.message_type = "conformance.Unknown".into();
    let entries: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![
        vec![(b"body".to_vec(), b"this is not json".to_vec())],
        vec![
            (b"address".to_vec(), b"conformance.Ping".to_vec()),
            (
                b"body".to_vec(),
                br#"{"bandeja":1,"kind":"event","type":"conformance.Ping"}"#.to_vec(),
            ),
        ],
        vec![
            (b"address".to_vec(), b"conformance.Ping".to_vec()),
            (b"body".to_vec(), wire::encode(&unknown, Some("rogue"))),
        ],
        vec![(b"foo".to_vec(), b"bar".to_vec())],
        vec![
            (vec![0xff, 0xfe], vec![0x80]),
            (b"body".to_vec(), vec![0xc3, 0x28]),
        ],
        vec![
            (b"address".to_vec(), b"conformance.Ping".to_vec()),
            (b"body".to_vec(), wire::encode(&good, Some("rogue"))),
        ],
    ];
    let mut raw = common::raw().await;
    for fields in &entries {
        let mut xadd = redis::cmd("XADD");
        xadd.arg(format!("{prefix}.events.p0")).arg("*");
        for (name, value) in fields {
            xadd.arg(name.as_slice()).arg(value.as_slice());
        }
        let _: String = xadd.query_async(&mut raw).await.expect("XADD");
    }

    let rows = eventually(WAIT, || async {
        let rows = store.rows(BoxKind::InboxEvents).await.expect("rows");
        let settled = rows.len() == entries.len()
            && rows.iter().all(|r| {
                matches!(
                    r.message.status,
                    MessageStatus::Completed | MessageStatus::Failed
                )
            });
        settled.then_some(rows)
    })
    .await
    .expect("every entry has a settled inbox row");
    running.shutdown_within(Duration::from_secs(10)).await;

    assert_eq!(*seen.0.lock().expect("seen"), vec![good.id]);
    let failed: Vec<_> = rows
        .iter()
        .filter(|r| r.message.status == MessageStatus::Failed)
        .collect();
    assert_eq!(failed.len(), entries.len() - 1, "{rows:#?}");
    let reasons: Vec<String> = failed
        .iter()
        .map(|r| r.message.last_error.clone().unwrap_or_default())
        .collect();
    let all = reasons.join("\n");
    for expected in [
        "not JSON",
        "not a bandeja message",
        "no subscriber for event type `conformance.Unknown`",
    ] {
        assert!(all.contains(expected), "a row says {expected:?}:\n{all}");
    }
    assert!(
        failed
            .iter()
            .any(|r| r.message.record.payload.contains("without a `body` field")),
        "the entry without a body is described in its row"
    );
}

/// A server that is not there fails `connect` at once, saying where it looked.
#[tokio::test]
async fn connecting_where_nothing_listens_fails_quickly_and_says_where() {
    let started = Instant::now();
    let error = RedisTransport::connect(
        RedisOptions::new("redis://someone:secret@127.0.0.1:1/0")
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
            redis_error(&error),
            RedisError::Connect { .. } | RedisError::ConnectTimeout { .. }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("cannot connect to Redis at redis://someone@127.0.0.1:1/0"),
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
        (RedisOptions::default().partitions(0), "`partitions`"),
        (RedisOptions::default().prefix(""), "`prefix`"),
        (RedisOptions::default().prefix("has space"), "`prefix`"),
        (RedisOptions::new("http://127.0.0.1"), "`url`"),
        (RedisOptions::new("rediss://127.0.0.1:6379"), "TLS"),
        (RedisOptions::default().max_len(0), "`max_len`"),
        (
            RedisOptions::default().claim_idle(Duration::ZERO),
            "`claim_idle`",
        ),
    ];
    for (options, expected) in cases {
        let error = RedisTransport::connect(options)
            .await
            .expect_err("invalid options");
        assert_eq!(error.kind(), TransportErrorKind::Rejected, "{error}");
        assert!(
            matches!(redis_error(&error), RedisError::InvalidOptions(_)),
            "{error:?}"
        );
        assert!(
            error.to_string().contains(expected),
            "{error} names {expected}"
        );
    }
}

/// Services of one prefix must agree on the partition count: the first records it, a
/// later process configured with another count is refused at start, naming both.
#[tokio::test]
async fn a_process_with_another_partition_count_is_refused_at_start() {
    let prefix = common::namespace();
    let _cleanup = common::Cleanup::of(&prefix);
    let first = common::connect(common::options(&prefix).partitions(4)).await;
    let refused = RedisTransport::connect(common::options(&prefix).partitions(8))
        .await
        .expect_err("8 partitions where the system uses 4");
    assert_eq!(refused.kind(), TransportErrorKind::Rejected, "{refused}");
    assert!(
        matches!(
            redis_error(&refused),
            RedisError::PartitionMismatch { configured: 8, declared, .. } if declared == "4"
        ),
        "{refused:?}"
    );
    let message = refused.to_string();
    for expected in [
        "configured with 8 partitions",
        "use 4",
        "set `partitions` to 4",
    ] {
        assert!(message.contains(expected), "{message:?} says {expected:?}");
    }
    let same = common::connect(common::options(&prefix).partitions(4)).await;
    drop((first, same));
}

/// A key of the prefix that holds another type refuses the messages for it alone
/// (rejected, naming the key); the others of the call go, results in order; a partition
/// beyond the count is rejected too.
#[tokio::test]
async fn a_key_holding_another_type_rejects_only_its_messages() {
    let prefix = common::namespace();
    let transport = common::guarded(&prefix, common::options(&prefix)).await;
    let mut raw = common::raw().await;
    let _: () = redis::cmd("SET")
        .arg(format!("{prefix}.events.p1"))
        .arg("not a stream")
        .query_async(&mut raw)
        .await
        .expect("SET");
    let (a, b, c) = (ping(1), ping(2), ping(3));
    let results = transport
        .inner
        .publish(
            MessageKind::Event,
            &[
                outgoing(&a, "conformance.Ping", 0),
                outgoing(&b, "conformance.Ping", 1),
                outgoing(&c, "conformance.Ping", 2),
                outgoing(&c, "conformance.Ping", 4),
            ],
            soon(),
        )
        .await;
    assert_eq!(results.len(), 4);
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    let wrong = results[1].as_ref().expect_err("a string key");
    assert_eq!(wrong.kind(), TransportErrorKind::Rejected);
    assert!(
        matches!(redis_error(wrong), RedisError::WrongType { key } if key.ends_with(".events.p1")),
        "{wrong:?}"
    );
    let beyond = results[3].as_ref().expect_err("partition 4 of 4");
    assert!(
        matches!(
            redis_error(beyond),
            RedisError::Partition {
                partition: 4,
                partitions: 4
            }
        ),
        "{beyond:?}"
    );
}

/// A command published before its service ever ran waits in its topic's stream, and an
/// event in its partition's: the group a service creates delivers the stream from the
/// start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_published_before_a_group_exists_is_delivered_once_it_does() {
    let prefix = common::namespace();
    let transport = common::guarded(&prefix, common::options(&prefix)).await;
    let command = tenant::sync_scope(TenantId::new("acme").expect("tenant"), || {
        Command::to_self("billing", Ping { n: 1 })
    })
    .expect("command");
    let command = MessageRecord::from_command(&command).expect("record");
    let event = ping(7);
    for (kind, message) in [
        (
            MessageKind::Command,
            outgoing(&command, "billing-commands", 2),
        ),
        (MessageKind::Event, outgoing(&event, "conformance.Ping", 3)),
    ] {
        let results = transport
            .inner
            .publish(kind, std::slice::from_ref(&message), soon())
            .await;
        assert!(results[0].is_ok(), "{results:?}");
    }

    let (commands, events) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    let subscriptions = [
        transport
            .inner
            .subscribe(
                request(MessageKind::Command, "billing", "billing-commands"),
                commands.clone(),
            )
            .await
            .expect("subscribe to commands"),
        transport
            .inner
            .subscribe(
                request(MessageKind::Event, "billing", "conformance.Ping"),
                events.clone(),
            )
            .await
            .expect("subscribe to events"),
    ];
    eventually(WAIT, || async {
        (commands.ids(MessageKind::Command) == vec![command.id]
            && events.ids(MessageKind::Event) == vec![event.id])
        .then_some(())
    })
    .await
    .expect("both arrived");
    for subscription in subscriptions {
        subscription.stop().await;
    }
}

/// Closes, with `CLIENT KILL`, every connection whose name says it is of `prefix` (only
/// this test's); returns how many it closed.
async fn close_connections_of(prefix: &str) -> usize {
    let mut raw = common::raw().await;
    let listed: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut raw)
        .await
        .expect("CLIENT LIST");
    let marker = format!("name=bandeja:{prefix}:");
    let ids: Vec<String> = listed
        .lines()
        .filter(|line| line.contains(&marker))
        .filter_map(|line| {
            line.split(' ')
                .find_map(|field| field.strip_prefix("id="))
                .map(str::to_owned)
        })
        .collect();
    for id in &ids {
        let _: i64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(id)
            .query_async(&mut raw)
            .await
            .expect("CLIENT KILL");
    }
    ids.len()
}

/// When the server closes the connections of the publisher and of a subscription, the
/// next publishes reconnect and the consumers reconnect and consume again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publisher_and_consumers_reconnect_after_the_server_closed_their_connections() {
    let prefix = common::namespace();
    let transport = common::guarded(&prefix, common::options(&prefix)).await;
    let recorder = Arc::new(Recorder::default());
    let subscription = transport
        .inner
        .subscribe(
            request(MessageKind::Event, "inventory", "conformance.Ping"),
            recorder.clone(),
        )
        .await
        .expect("subscribe");
    let before = ping(0);
    let results = transport
        .inner
        .publish(
            MessageKind::Event,
            &[outgoing(&before, "conformance.Ping", 2)],
            soon(),
        )
        .await;
    assert!(results[0].is_ok(), "{results:?}");
    eventually(WAIT, || async {
        recorder
            .ids(MessageKind::Event)
            .contains(&before.id)
            .then_some(())
    })
    .await
    .expect("delivered before the outage");

    let closed = close_connections_of(&prefix).await;
    assert_eq!(
        closed, 5,
        "the publisher's connection and the four consumers'"
    );

    let mut n = 100u64;
    let sent: Mutex<Vec<(u16, MessageId)>> = Mutex::new(Vec::new());
    eventually(WAIT, || {
        n += 1;
        let record = ping(n);
        let partition = u16::try_from(n % 4).unwrap_or(0);
        let (transport, recorder, sent) = (&transport, &recorder, &sent);
        async move {
            let results = transport
                .inner
                .publish(
                    MessageKind::Event,
                    &[outgoing(&record, "conformance.Ping", partition)],
                    soon(),
                )
                .await;
            if results[0].is_ok() {
                sent.lock().expect("sent").push((partition, record.id));
            }
            let arrived = recorder.ids(MessageKind::Event);
            let sent = sent.lock().expect("sent").clone();
            (0..4)
                .all(|p| sent.iter().any(|(q, id)| *q == p && arrived.contains(id)))
                .then_some(())
        }
    })
    .await
    .expect("events published now reach every partition's consumer");
    subscription.stop().await;
}

/// A transport shows its options in `Debug`.
#[tokio::test]
async fn debug_output_shows_the_options() {
    let prefix = common::namespace();
    let transport = common::guarded(&prefix, common::options(&prefix)).await;
    let shown = format!("{:?}", transport.inner);
    assert!(
        shown.contains(&prefix) && shown.contains("claim_idle"),
        "{shown}"
    );
}
