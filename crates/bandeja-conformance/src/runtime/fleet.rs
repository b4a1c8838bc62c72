//! Mixed fleets on one store: runtimes with different subscriber sets (an old and a new
//! version of one application, the moment of a rolling deploy) fan out, claim and receive
//! from the subscriptions in the database. A row is never FAILED because the process that
//! met it lacks its subscriber: it waits for a process that runs it.

use std::sync::Arc;

use bandeja_core::config::Enabled;
use bandeja_core::envelope::{Command, Payload};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{CommandHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Store};
use bandeja_core::tenant::{self, TenantId};

use super::recorder::{Behaviour, Recorder};
use super::{all, emit_pings, rows, wait_rows};
use crate::fixtures::outbox_of;
use crate::fixtures::{fast_config, Archive, Ping, Pong};

/// A command type no process ever registers a handler for.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Unhandled {
    n: u64,
}

impl Payload for Unhandled {
    const TYPE: &'static str = "conformance.Unhandled";
}

/// Counts the commands it handled.
#[derive(Clone, Default)]
struct Archiver(Arc<std::sync::Mutex<Vec<u64>>>);

impl<S: Store> CommandHandler<S, Archive> for Archiver {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        command: Command<Archive>,
    ) -> Result<(), HandlerError> {
        self.0.lock().expect("archived").push(command.payload.n);
        Ok(())
    }
}

fn seen_by(recorder: &Recorder, subscriber: &str) -> Vec<bandeja_core::envelope::MessageId> {
    let mut ids: Vec<_> = recorder
        .seen
        .lock()
        .expect("seen")
        .iter()
        .filter(|s| s.1 == subscriber)
        .map(|s| s.0)
        .collect();
    ids.sort();
    ids
}

/// Two processes on one database, the old one with subscriber `audit`, the new one with
/// `audit` and `billing`: every event reaches `audit` once and `billing` once, whichever
/// process relays it, and nothing is FAILED (the old process never claims a `billing` row).
pub async fn a_process_without_a_subscriber_never_fails_its_rows<S: Inspect>(store: S) {
    let old = Recorder::new(Behaviour::Succeed);
    let new_audit = Recorder::new(Behaviour::Succeed);
    let billing = Recorder::new(Behaviour::Pause(std::time::Duration::from_millis(5)));
    let old_process = Bandeja::builder(store.clone())
        .config(fast_config())
        .worker_id("old")
        .on_event::<Ping, _>("audit", old.clone())
        .build()
        .expect("build the old process");
    let new_process = Bandeja::builder(store.clone())
        .config(fast_config())
        .worker_id("new")
        .on_event::<Ping, _>("audit", new_audit.clone())
        .on_event::<Ping, _>("billing", billing.clone())
        .build()
        .expect("build the new process");
    let new_running = new_process.start().await.expect("start the new process");
    let old_running = old_process.start().await.expect("start the old process");
    let mut ids = emit_pings(&store, 0..20, |n| format!("k{}", n % 5)).await;
    ids.extend(emit_pings(&store, 20..40, |n| format!("k{}", n % 5)).await);
    ids.sort();
    let inbox = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 80),
    )
    .await;
    old_running.shutdown().await;
    new_running.shutdown().await;
    let mut audited = seen_by(&old, "audit");
    audited.extend(seen_by(&new_audit, "audit"));
    audited.sort();
    assert_eq!(audited, ids, "audit saw every event once");
    assert_eq!(
        seen_by(&billing, "billing"),
        ids,
        "billing saw every event once"
    );
    assert!(
        inbox
            .iter()
            .all(|r| r.message.status == MessageStatus::Completed),
        "nothing FAILED"
    );
}

/// A subscription registered by a process that is not running keeps receiving: any
/// process's relay creates its rows, which wait (PENDING, never FAILED) until a process
/// that runs it starts and handles each once.
pub async fn rows_of_a_subscriber_no_process_runs_wait_for_one<S: Inspect>(store: S) {
    let billing = Recorder::new(Behaviour::Succeed);
    let billing_process = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("billing", billing.clone())
        .build()
        .expect("build billing");
    billing_process
        .start()
        .await
        .expect("register billing")
        .shutdown()
        .await;
    let audit = Recorder::new(Behaviour::Succeed);
    let audit_running = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("audit", audit.clone())
        .build()
        .expect("build audit")
        .start()
        .await
        .expect("start audit");
    let ids = emit_pings(&store, 0..10, |n| format!("k{n}")).await;
    let inbox = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.len() == 20
            && rows
                .iter()
                .filter(|r| r.message.subscriber.as_deref() == Some("audit"))
                .all(|r| r.message.status == MessageStatus::Completed)
    })
    .await;
    let waiting: Vec<_> = inbox
        .iter()
        .filter(|r| r.message.subscriber.as_deref() == Some("billing"))
        .collect();
    assert_eq!(waiting.len(), 10, "billing got a row for every event");
    assert!(
        waiting
            .iter()
            .all(|r| r.message.status == MessageStatus::Pending && r.message.retry_count == 0),
        "billing's rows wait, untouched: {waiting:#?}"
    );
    let billing_running = billing_process.start().await.expect("start billing again");
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 20),
    )
    .await;
    billing_running.shutdown().await;
    audit_running.shutdown().await;
    let mut sorted = ids;
    sorted.sort();
    assert_eq!(seen_by(&billing, "billing"), sorted);
    assert_eq!(seen_by(&audit, "audit"), sorted);
}

/// A command whose handler was registered by a process that is not running waits in the
/// inbox for it; a command of a type no process has ever registered is FAILED with
/// "no handler", whichever process relays it.
pub async fn commands_wait_for_their_registered_handler<S: Inspect>(store: S) {
    let archiver = Archiver::default();
    let handler_process = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_command::<Archive, _>("archiver", archiver.clone())
        .build()
        .expect("build the handler's process");
    handler_process
        .start()
        .await
        .expect("register the handler")
        .shutdown()
        .await;
    let mut config = fast_config();
    config.commands_outbox.enabled = Enabled::On;
    let sender = Bandeja::builder(store.clone())
        .config(config)
        .build()
        .expect("build the sender");
    let sending = sender.start().await.expect("start the sender");
    let acme = TenantId::new("acme").expect("tenant");
    let (archive, unhandled) = tenant::scope(acme, async {
        (
            Command::to_self("archiver", Archive { n: 7 }),
            Command::to_self("archiver", Unhandled { n: 8 }),
        )
    })
    .await;
    sender.send(&archive.expect("command")).await.expect("send");
    sender
        .send(&unhandled.expect("command"))
        .await
        .expect("send");
    let outbox = wait_rows(&store, BoxKind::OutboxCommands, |rows| {
        rows.len() == 2
            && rows.iter().all(|r| {
                r.message.status != MessageStatus::Pending
                    && r.message.status != MessageStatus::Processing
            })
    })
    .await;
    let status_of = |message_type: &str| {
        outbox
            .iter()
            .find(|r| r.message.record.message_type == message_type)
            .map(|r| {
                (
                    r.message.status,
                    r.message.last_error.clone().unwrap_or_default(),
                )
            })
            .expect("row")
    };
    assert_eq!(status_of(Archive::TYPE).0, MessageStatus::Completed);
    let (status, error) = status_of(Unhandled::TYPE);
    assert_eq!(status, MessageStatus::Failed);
    assert!(
        error.contains("no handler for command type `conformance.Unhandled`"),
        "{error}"
    );
    let inbox = rows(&store, BoxKind::InboxCommands).await;
    assert_eq!(
        inbox.len(),
        1,
        "only the registered command reached the inbox"
    );
    assert_eq!(inbox[0].message.status, MessageStatus::Pending, "it waits");
    assert!(archiver.0.lock().expect("archived").is_empty());
    let handling = handler_process
        .start()
        .await
        .expect("start the handler again");
    wait_rows(
        &store,
        BoxKind::InboxCommands,
        all(MessageStatus::Completed, 1),
    )
    .await;
    handling.shutdown().await;
    sending.shutdown().await;
    assert_eq!(*archiver.0.lock().expect("archived"), vec![7]);
}

/// Broker path, two processes of one service with different subscriber sets: the process
/// that receives a message stores a row for every subscription of the service registered
/// in the database, including one only the other process runs, which handles it.
pub async fn reception_stores_rows_for_subscriptions_of_other_processes<S: Inspect>(store: S) {
    let transport = bandeja_core::transport::direct::DirectTransport::new();
    let old = Recorder::new(Behaviour::Succeed);
    let new_billing = Recorder::new(Behaviour::Succeed);
    let old_process = Bandeja::builder(store.clone())
        .config(fast_config())
        .service("svc")
        .transport(Arc::new(transport.clone()))
        .on_event::<Ping, _>("audit", old.clone())
        .build()
        .expect("build the old process");
    let new_process = Bandeja::builder(store.clone())
        .config(fast_config())
        .service("svc")
        .transport(Arc::new(transport))
        .on_event::<Ping, _>("audit", new_billing.clone())
        .on_event::<Ping, _>("billing", new_billing.clone())
        .build()
        .expect("build the new process");
    // The old process subscribes first, so it is the one that receives (one subscription
    // per service gets each message).
    let old_running = old_process.start().await.expect("start the old process");
    let new_running = new_process.start().await.expect("start the new process");
    let mut ids = emit_pings(&store, 0..10, |n| format!("k{n}")).await;
    ids.sort();
    let inbox = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 20),
    )
    .await;
    old_running.shutdown().await;
    new_running.shutdown().await;
    assert_eq!(seen_by(&new_billing, "billing"), ids);
    let mut audited = seen_by(&old, "audit");
    audited.extend(seen_by(&new_billing, "audit"));
    audited.sort();
    assert_eq!(audited, ids);
    assert!(inbox.iter().all(|r| r.message.subscriber.as_deref()
        != Some(bandeja_core::transport::wire::REJECTED_SUBSCRIBER)));
}

/// A subscriber that takes one more type in a newer version: the old process (which runs
/// it for `Ping` only) never claims its rows of the new type — they wait, untouched, for
/// the newer process — while it goes on handling its `Ping`s.
pub async fn a_process_claims_only_the_types_it_runs_a_subscriber_for<S: Inspect>(store: S) {
    let newer = Recorder::new(Behaviour::Succeed);
    let newer_process = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("audit", newer.clone())
        .on_event::<Pong, _>("audit", newer.clone())
        .build()
        .expect("build the newer process");
    newer_process
        .start()
        .await
        .expect("register the newer version")
        .shutdown()
        .await;
    let old = Recorder::new(Behaviour::Succeed);
    let old_running = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("audit", old.clone())
        .build()
        .expect("build the old process")
        .start()
        .await
        .expect("start the old process");
    let outbox = outbox_of(&store);
    let mut tx = store.begin().await.expect("begin");
    for n in 0..5 {
        let pong = bandeja_core::envelope::Event::new("Pong", format!("k{n}"), Pong { n });
        outbox.emit(&mut *tx, &pong).await.expect("emit a pong");
    }
    store.commit(tx).await.expect("commit");
    let pings = emit_pings(&store, 0..5, |n| format!("p{n}")).await;
    let inbox = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.len() == 10
            && rows
                .iter()
                .filter(|r| r.message.record.message_type == Ping::TYPE)
                .all(|r| r.message.status == MessageStatus::Completed)
    })
    .await;
    // The pongs were relayed no later than the pings (emitted first), so the old process's
    // claims that took the pings met them.
    {
        let pongs: Vec<_> = inbox
            .iter()
            .filter(|r| r.message.record.message_type == Pong::TYPE)
            .collect();
        assert_eq!(pongs.len(), 5);
        // A row claimed and then released (PENDING again, nothing spent) would look
        // untouched but for its due time, which the release moves to when it wrote.
        assert!(
            pongs
                .iter()
                .all(|r| r.message.status == MessageStatus::Pending
                    && r.locked_by.is_none()
                    && r.message.retry_count == 0
                    && r.message.takeovers == 0
                    && r.next_attempt_at == Some(r.created_at)),
            "the old process never claimed a row of a type it does not run: {pongs:#?}"
        );
    }
    let mut sorted = pings;
    sorted.sort();
    assert_eq!(
        seen_by(&old, "audit"),
        sorted,
        "the old process handled its pings"
    );
    let newer_running = newer_process
        .start()
        .await
        .expect("start the newer process");
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 10),
    )
    .await;
    newer_running.shutdown().await;
    old_running.shutdown().await;
    assert_eq!(
        newer.seen.lock().expect("seen").len(),
        5,
        "the newer process handled the five pongs, once each"
    );
}

/// One subscriber with an every-tenant and a tenant subscription for the same type (a
/// newer version made it tenant-scoped; the older row stays until retired): a message of
/// that tenant gets one row for it, and the relay goes on.
pub async fn a_subscriber_with_an_every_tenant_and_a_tenant_subscription_gets_one_row<
    S: Inspect,
>(
    store: S,
) {
    let acme = TenantId::new("acme").expect("tenant");
    let scoped =
        [None, Some(acme.clone())].map(|tenant| bandeja_core::subscriptions::Subscription {
            kind: bandeja_core::MessageKind::Event,
            message_type: Ping::TYPE.to_owned(),
            subscriber: "audit".to_owned(),
            tenant,
        });
    store
        .register(&bandeja_core::subscriptions::Registration {
            process: "an-older-version#0",
            service: "",
            host: "elsewhere",
            pid: 1,
            subscriptions: &scoped,
        })
        .await
        .expect("register both");
    let audit = Recorder::new(Behaviour::Succeed);
    let running = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("audit", audit.clone())
        .build()
        .expect("build")
        .start()
        .await
        .expect("start");
    let ids = tenant::scope(acme, emit_pings(&store, 0..5, |n| format!("k{n}"))).await;
    let more = emit_pings(&store, 5..10, |n| format!("k{n}")).await;
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 10),
    )
    .await;
    running.shutdown().await;
    let mut expected: Vec<_> = ids.into_iter().chain(more).collect();
    expected.sort();
    assert_eq!(
        seen_by(&audit, "audit"),
        expected,
        "each message handled once"
    );
}
