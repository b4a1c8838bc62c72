//! The runtime conformance suite: the whole path (emission → dispatch → in-process transport
//! → inbox → handler in its transaction) on a real store, with
//! [`runtime_conformance_tests!`](crate::runtime_conformance_tests).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::Ping;
use crate::config::{Config, Enabled, Group};
use crate::envelope::{Command, Event, MessageId, Payload};
use crate::error::{Error, HandlerError};
use crate::processing::{CommandHandler, EventBatchHandler, EventHandler, HandlerContext};
use crate::record::BoxKind;
use crate::runtime::Bandeja;
use crate::status::MessageStatus;
use crate::store::{Delivery, Inspect, RowView, Store};
use crate::tenant::{self, TenantId};
use crate::testing::{eventually, Scenario};

/// Generates one `#[tokio::test]` per runtime check; `$make` as for
/// [`store_conformance_tests!`](crate::store_conformance_tests).
#[macro_export]
macro_rules! runtime_conformance_tests {
    ($make:path) => {
        $crate::store_conformance_tests!(@tests_in runtime $make;
            events_reach_every_subscriber_once,
            rolled_back_emission_is_never_delivered,
            failing_handler_retries_with_backoff_then_fails_with_its_error,
            permanent_error_fails_at_once,
            panicking_handler_counts_as_a_failure_and_the_worker_survives,
            handler_emission_commits_with_the_handling_only,
            redelivered_message_never_reaches_the_handler_again,
            command_without_handler_fails_with_a_clear_error,
            commands_reach_their_handler_in_the_target_tenant,
            disabled_worker_does_not_run,
            duplicate_subscriber_is_a_startup_error,
            emission_wakes_the_workers_without_waiting_for_polling,
            graceful_shutdown_finishes_the_batch_in_hand,
            graceful_shutdown_releases_a_batch_that_cannot_finish,
            messages_of_one_key_are_handled_in_emission_order,
            scenario_waits_for_the_state_change,
            broker_path_acknowledges_after_storing_and_absorbs_redeliveries,
            batch_handler_gets_batches_and_a_poison_event_fails_alone,
            a_tenant_backlog_does_not_starve_another_tenant,
        );
    };
}

const WAIT: Duration = Duration::from_secs(20);

/// Short intervals so tests take milliseconds.
pub fn fast_config() -> Config {
    let mut config = Config::default();
    for group in Group::ALL {
        let g = config.group_mut(group);
        g.polling_interval = Duration::from_millis(100);
        g.polling_initial_delay = Duration::ZERO;
        g.lock_at_least_for = Duration::from_millis(100);
        g.lock_at_most_for = Duration::from_secs(10);
        g.retry_backoff_initial = Duration::from_millis(10);
        g.retry_backoff_max = Duration::from_millis(40);
        g.retry_jitter = 0.0;
        g.max_retries = 3;
    }
    config
}

/// What a test handler saw: (message id, subscriber, payload number).
type Seen = Arc<Mutex<Vec<(MessageId, String, u64)>>>;

/// How a [`Recorder`] behaves.
#[derive(Clone, Copy)]
enum Behaviour {
    Succeed,
    Fail,
    FailPermanently,
    PanicOn(u64),
    FailFirstAttemptOf(u64),
    Hang,
    Pause(Duration),
}

#[derive(Clone)]
struct Recorder {
    seen: Seen,
    attempts: Arc<Mutex<u32>>,
    behaviour: Behaviour,
    emit_pong: bool,
}

impl Recorder {
    fn new(behaviour: Behaviour) -> Self {
        Recorder {
            seen: Seen::default(),
            attempts: Arc::default(),
            behaviour,
            emit_pong: false,
        }
    }

    fn count(&self) -> usize {
        self.seen.lock().map(|s| s.len()).unwrap_or_default()
    }

    fn attempts(&self) -> u32 {
        self.attempts.lock().map(|a| *a).unwrap_or_default()
    }
}

/// An event emitted by handlers.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pong {
    /// The ping it answers.
    pub n: u64,
}

impl Payload for Pong {
    const TYPE: &'static str = "conformance.Pong";
}

/// A command.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Archive {
    /// What to archive.
    pub n: u64,
}

impl Payload for Archive {
    const TYPE: &'static str = "conformance.Archive";
}

impl Recorder {
    async fn on<S: Store>(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        id: MessageId,
        n: u64,
    ) -> Result<(), HandlerError> {
        if let Ok(mut a) = self.attempts.lock() {
            *a += 1;
        }
        if self.emit_pong {
            ctx.emit(Event::new("Ping", format!("p{n}"), Pong { n }))?;
        }
        match self.behaviour {
            Behaviour::Fail => return Err("boom".into()),
            Behaviour::FailPermanently => return Err(HandlerError::permanent("bad data")),
            Behaviour::PanicOn(p) if p == n => panic!("handler bug on {n}"),
            Behaviour::FailFirstAttemptOf(f) if f == n && ctx.retry_count() == 0 => {
                return Err("first attempt fails".into())
            }
            Behaviour::Hang => std::future::pending::<()>().await,
            Behaviour::Pause(d) => tokio::time::sleep(d).await,
            _ => {}
        }
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((id, ctx.subscriber().to_owned(), n));
        }
        Ok(())
    }
}

#[async_trait]
impl<S: Store> EventHandler<S, Ping> for Recorder {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        self.on(ctx, event.id, event.payload.n).await
    }
}

#[async_trait]
impl<S: Store> EventHandler<S, Pong> for Recorder {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<Pong>,
    ) -> Result<(), HandlerError> {
        self.on(ctx, event.id, event.payload.n).await
    }
}

/// Records the tenant it saw.
#[derive(Clone, Default)]
struct TenantProbe(Arc<Mutex<Vec<TenantSeen>>>);

/// (handler context tenant, command source tenant, task-local current tenant)
type TenantSeen = (TenantId, TenantId, Option<TenantId>);

#[async_trait]
impl<S: Store> CommandHandler<S, Archive> for TenantProbe {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        command: Command<Archive>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut seen) = self.0.lock() {
            seen.push((
                ctx.tenant().clone(),
                command.source_tenant_id.clone(),
                tenant::current(),
            ));
        }
        Ok(())
    }
}

async fn emit_pings<S: Store>(
    store: &S,
    range: std::ops::Range<u64>,
    key: impl Fn(u64) -> String,
) -> Vec<MessageId> {
    let outbox = crate::emission::Outbox::new(store.clone());
    let mut tx = store.begin().await.expect("begin");
    let mut ids = Vec::new();
    for n in range {
        let event = Event::new("Ping", key(n), Ping { n });
        ids.push(event.id);
        outbox.emit(&mut *tx, &event).await.expect("emit");
    }
    store.commit(tx).await.expect("commit");
    ids
}

async fn rows<S: Inspect>(store: &S, box_kind: BoxKind) -> Vec<RowView> {
    store.rows(box_kind).await.expect("rows")
}

pub(super) async fn wait_rows<S: Inspect>(
    store: &S,
    box_kind: BoxKind,
    done: impl Fn(&[RowView]) -> bool,
) -> Vec<RowView> {
    eventually(WAIT, || async {
        let rows = rows(store, box_kind).await;
        done(&rows).then_some(rows)
    })
    .await
    .unwrap_or_else(|e| panic!("{box_kind}: {e}"))
}

fn all(status: MessageStatus, n: usize) -> impl Fn(&[RowView]) -> bool {
    move |rows| rows.len() == n && rows.iter().all(|r| r.message.status == status)
}

/// Every event reaches each of its subscribers exactly once; every row ends COMPLETED.
pub async fn events_reach_every_subscriber_once<S: Inspect>(store: S) {
    let (a, b) = (
        Recorder::new(Behaviour::Succeed),
        Recorder::new(Behaviour::Succeed),
    );
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("inventory", a.clone())
        .on_event::<Ping, _>("notification", b.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let ids = emit_pings(&store, 0..20, |n| format!("k{}", n % 4)).await;
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 40),
    )
    .await;
    running.shutdown().await;
    for recorder in [&a, &b] {
        let mut seen: Vec<_> = recorder
            .seen
            .lock()
            .expect("seen")
            .iter()
            .map(|s| s.0)
            .collect();
        seen.sort();
        assert_eq!(seen, ids, "each subscriber saw each event once");
    }
    assert!(rows(&store, BoxKind::OutboxEvents)
        .await
        .iter()
        .all(|r| r.message.status == MessageStatus::Completed));
}

/// A rolled-back emission never reaches a handler.
pub async fn rolled_back_emission_is_never_delivered<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(
            &mut *tx,
            crate::MessageKind::Event,
            &[
                crate::MessageRecord::from_event(&Event::new("Ping", "x", Ping { n: 99 }))
                    .expect("record"),
            ],
        )
        .await
        .expect("insert");
    drop(tx);
    emit_pings(&store, 0..1, |_| "y".into()).await;
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 1),
    )
    .await;
    running.shutdown().await;
    assert_eq!(
        recorder
            .seen
            .lock()
            .expect("seen")
            .iter()
            .map(|s| s.2)
            .collect::<Vec<_>>(),
        vec![0]
    );
    assert_eq!(rows(&store, BoxKind::OutboxEvents).await.len(), 1);
}

/// Retries with backoff until `max-retries`, then FAILED with the handler's error.
pub async fn failing_handler_retries_with_backoff_then_fails_with_its_error<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Fail);
    let mut config = fast_config();
    config.events_inbox.max_retries = 2;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    let rows = wait_rows(&store, BoxKind::InboxEvents, all(MessageStatus::Failed, 1)).await;
    running.shutdown().await;
    assert_eq!(rows[0].message.retry_count, 2);
    assert!(
        rows[0]
            .message
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("boom")),
        "{:?}",
        rows[0].message.last_error
    );
    assert_eq!(recorder.attempts(), 3, "first attempt + 2 retries");
    assert_eq!(recorder.count(), 0);
}

/// A permanent error goes to FAILED without retries.
pub async fn permanent_error_fails_at_once<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::FailPermanently);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    let rows = wait_rows(&store, BoxKind::InboxEvents, all(MessageStatus::Failed, 1)).await;
    running.shutdown().await;
    assert_eq!((recorder.attempts(), rows[0].message.retry_count), (1, 0));
    assert!(rows[0]
        .message
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("bad data")));
}

/// A panic is a failed attempt; the worker goes on with other messages.
pub async fn panicking_handler_counts_as_a_failure_and_the_worker_survives<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::PanicOn(0));
    let mut config = fast_config();
    config.events_inbox.max_retries = 1;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..3, |n| format!("k{n}")).await;
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.len() == 3 && rows.iter().all(|r| r.message.status.is_terminal())
    })
    .await;
    running.shutdown().await;
    assert_eq!(rows[0].message.status, MessageStatus::Failed);
    assert!(rows[0]
        .message
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("panicked") && e.contains("handler bug on 0")));
    assert!(rows[1..]
        .iter()
        .all(|r| r.message.status == MessageStatus::Completed));
}

/// What a handler emits commits with its handling: a failed attempt leaves nothing behind,
/// and the emitted event carries causation and correlation.
pub async fn handler_emission_commits_with_the_handling_only<S: Inspect>(store: S) {
    let mut pinger = Recorder::new(Behaviour::FailFirstAttemptOf(7));
    pinger.emit_pong = true;
    let ponger = Recorder::new(Behaviour::Succeed);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("pinger", pinger.clone())
        .on_event::<Pong, _>("ponger", ponger.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let event = Event::new("Ping", "k", Ping { n: 7 }).with_correlation_id("order-7");
    bandeja.emit(&event).await.expect("emit");
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 2),
    )
    .await;
    running.shutdown().await;
    assert_eq!(pinger.attempts(), 2);
    let outbox = rows(&store, BoxKind::OutboxEvents).await;
    let pongs: Vec<_> = outbox
        .iter()
        .filter(|r| r.message.record.message_type == Pong::TYPE)
        .collect();
    assert_eq!(
        pongs.len(),
        1,
        "the failed attempt's emission was rolled back"
    );
    assert_eq!(pongs[0].message.record.headers.causation_id, Some(event.id));
    assert_eq!(
        pongs[0].message.record.headers.correlation_id.as_deref(),
        Some("order-7")
    );
    assert_eq!(ponger.count(), 1);
}

/// A redelivery of a handled message is absorbed: delivery_count goes up, the handler is not called.
pub async fn redelivered_message_never_reaches_the_handler_again<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    let first = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 1),
    )
    .await;
    let subscribers = vec!["s".to_owned()];
    let record = first[0].message.record.clone();
    let report = store
        .receive(
            crate::MessageKind::Event,
            &[Delivery {
                record: &record,
                subscribers: &subscribers,
            }],
        )
        .await
        .expect("receive");
    assert_eq!((report.inserted, report.duplicates), (0, 1));
    store.wakers().wake(BoxKind::InboxEvents);
    emit_pings(&store, 1..2, |_| "k".into()).await; // a marker handled after any redelivery would be
    let rows = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 2),
    )
    .await;
    running.shutdown().await;
    assert_eq!(rows[0].message.delivery_count, 2);
    assert_eq!(
        recorder
            .seen
            .lock()
            .expect("seen")
            .iter()
            .map(|s| s.2)
            .collect::<Vec<_>>(),
        vec![0, 1]
    );
}

/// A command nobody handles ends FAILED with an error that says so.
pub async fn command_without_handler_fails_with_a_clear_error<S: Inspect>(store: S) {
    let mut config = fast_config();
    config.commands_outbox.enabled = Enabled::On;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let command = tenant::scope(TenantId::new("acme").expect("tenant"), async {
        Command::to_self("archiver", Archive { n: 1 })
    })
    .await
    .expect("command");
    bandeja.send(&command).await.expect("send");
    let rows = wait_rows(
        &store,
        BoxKind::OutboxCommands,
        all(MessageStatus::Failed, 1),
    )
    .await;
    running.shutdown().await;
    let error = rows[0].message.last_error.clone().unwrap_or_default();
    assert!(
        error.contains("no handler for command type `conformance.Archive`"),
        "{error}"
    );
}

/// A command goes to its one handler, running in the target tenant's scope.
pub async fn commands_reach_their_handler_in_the_target_tenant<S: Inspect>(store: S) {
    let probe = TenantProbe::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_command::<Archive, _>("archiver", probe.clone())
        .build()
        .expect("build");
    assert!(
        bandeja.worker_enabled(BoxKind::OutboxCommands)
            && bandeja.worker_enabled(BoxKind::InboxCommands)
    );
    let running = bandeja.start().await.expect("start");
    let (acme, globex) = (
        TenantId::new("acme").expect("t"),
        TenantId::new("globex").expect("t"),
    );
    let command = tenant::scope(acme.clone(), async {
        Command::to(globex.clone(), "archiver", Archive { n: 1 })
    })
    .await
    .expect("command");
    let outbox = crate::emission::Outbox::new(store.clone());
    let mut tx = store.begin().await.expect("begin");
    outbox.send(&mut *tx, &command).await.expect("send");
    store.commit(tx).await.expect("commit");
    let rows = wait_rows(
        &store,
        BoxKind::InboxCommands,
        all(MessageStatus::Completed, 1),
    )
    .await;
    running.shutdown().await;
    assert_eq!(rows[0].message.record.inbox_tenant(), &globex);
    let seen = probe.0.lock().expect("seen").clone();
    assert_eq!(seen, vec![(globex.clone(), acme, Some(globex))]);
}

/// A worker switched off does not run: its box keeps its rows.
pub async fn disabled_worker_does_not_run<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let mut config = fast_config();
    config.events_inbox.enabled = Enabled::Off;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    assert!(!bandeja.worker_enabled(BoxKind::InboxEvents));
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    wait_rows(
        &store,
        BoxKind::OutboxEvents,
        all(MessageStatus::Completed, 1),
    )
    .await;
    // The dispatcher woke the inbox; with its worker off, the row must not leave PENDING
    // during four polling intervals.
    let left_pending = eventually(Duration::from_millis(400), || async {
        let inbox = rows(&store, BoxKind::InboxEvents).await;
        inbox
            .iter()
            .any(|r| r.message.status != MessageStatus::Pending)
            .then_some(())
    })
    .await;
    running.shutdown().await;
    assert!(
        left_pending.is_err(),
        "the inbox row was processed by a disabled worker"
    );
    assert_eq!(
        rows(&store, BoxKind::InboxEvents).await[0].message.status,
        MessageStatus::Pending
    );
    assert_eq!(recorder.attempts(), 0);
}

/// Two subscribers with one name for one type is a startup error.
pub async fn duplicate_subscriber_is_a_startup_error<S: Inspect>(store: S) {
    let result = Bandeja::builder(store)
        .on_event::<Ping, _>("inventory", Recorder::new(Behaviour::Succeed))
        .on_event::<Ping, _>("inventory", Recorder::new(Behaviour::Succeed))
        .build();
    assert!(
        matches!(result, Err(Error::DuplicateSubscriber { ref subscriber, .. }) if subscriber == "inventory")
    );
}

/// With hour-long polling, an emission is still handled at once: the commit wakes the workers.
pub async fn emission_wakes_the_workers_without_waiting_for_polling<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let mut config = fast_config();
    for group in Group::ALL {
        config.group_mut(group).polling_interval = Duration::from_secs(3600);
    }
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    // The first message may be taken by the workers' first cycle; after it they sleep for
    // an hour unless a commit wakes them.
    emit_pings(&store, 0..1, |_| "a".into()).await;
    eventually(Duration::from_secs(5), || async {
        (recorder.count() == 1).then_some(())
    })
    .await
    .expect("first handled");
    let started = std::time::Instant::now();
    emit_pings(&store, 1..2, |_| "b".into()).await;
    eventually(Duration::from_secs(5), || async {
        (recorder.count() == 2).then_some(())
    })
    .await
    .expect("handled without polling");
    running.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Shutdown waits for the batch in hand to finish.
pub async fn graceful_shutdown_finishes_the_batch_in_hand<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Pause(Duration::from_millis(300)));
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    eventually(WAIT, || async { (recorder.attempts() == 1).then_some(()) })
        .await
        .expect("handler started");
    running.shutdown().await;
    assert_eq!(
        rows(&store, BoxKind::InboxEvents).await[0].message.status,
        MessageStatus::Completed
    );
}

/// A batch that cannot finish in time is released to PENDING without spending retries.
pub async fn graceful_shutdown_releases_a_batch_that_cannot_finish<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Hang);
    let mut config = fast_config();
    config.events_inbox.lock_at_most_for = Duration::from_secs(4);
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    eventually(WAIT, || async { (recorder.attempts() == 1).then_some(()) })
        .await
        .expect("handler started");
    running.shutdown().await;
    let row = &rows(&store, BoxKind::InboxEvents).await[0];
    assert_eq!(
        (
            row.message.status,
            row.message.retry_count,
            row.locked_by.clone()
        ),
        (MessageStatus::Pending, 0, None)
    );
}

/// Same key: handled in emission order even when one message needs a retry.
pub async fn messages_of_one_key_are_handled_in_emission_order<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::FailFirstAttemptOf(3));
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..10, |n| {
        if n % 2 == 0 {
            "even".into()
        } else {
            "odd".into()
        }
    })
    .await;
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 10),
    )
    .await;
    running.shutdown().await;
    let seen = recorder.seen.lock().expect("seen").clone();
    let order = |parity: u64| {
        seen.iter()
            .filter(|s| s.2 % 2 == parity)
            .map(|s| s.2)
            .collect::<Vec<_>>()
    };
    assert_eq!(order(0), vec![0, 2, 4, 6, 8]);
    assert_eq!(order(1), vec![1, 3, 5, 7, 9]);
}

/// The Scenario harness: publish, wait for a state change, verify.
pub async fn scenario_waits_for_the_state_change<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let probe = recorder.clone();
    let seen = Scenario::new(&bandeja)
        .publish(Event::new("Ping", "k", Ping { n: 5 }))
        .await
        .expect("publish")
        .and_wait_for_state_change(
            || {
                let probe = probe.clone();
                async move { probe.count() }
            },
            |count| *count > 0,
        )
        .await
        .expect("state change")
        .and_verify(|count| assert_eq!(*count, 1));
    running.shutdown().await;
    assert_eq!(seen, 1);
}

/// Through a transport (publish with acknowledgement → reception with dedup → processing):
/// a broker that delivers everything twice still gets each message handled once.
pub async fn broker_path_acknowledges_after_storing_and_absorbs_redeliveries<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Succeed);
    let transport = crate::transport::direct::DirectTransport::new().redelivering(2);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .service("svc")
        .transport(Arc::new(transport))
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let ids = emit_pings(&store, 0..5, |n| format!("k{n}")).await;
    let inbox = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 5),
    )
    .await;
    running.shutdown().await;
    assert!(
        inbox.iter().all(|r| r.message.delivery_count == 2),
        "each copy was absorbed"
    );
    let mut seen: Vec<_> = recorder
        .seen
        .lock()
        .expect("seen")
        .iter()
        .map(|s| s.0)
        .collect();
    seen.sort();
    assert_eq!(seen, ids);
    assert!(rows(&store, BoxKind::OutboxEvents)
        .await
        .iter()
        .all(|r| r.message.status == MessageStatus::Completed));
}

/// Records the size of each batch it gets; fails (permanently) any batch holding `poison`.
#[derive(Clone, Default)]
struct Batcher {
    sizes: Arc<Mutex<Vec<usize>>>,
    handled: Arc<Mutex<Vec<u64>>>,
    poison: u64,
}

#[async_trait]
impl<S: Store> EventBatchHandler<S, Ping> for Batcher {
    async fn handle_batch(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        events: Vec<Event<Ping>>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut sizes) = self.sizes.lock() {
            sizes.push(events.len());
        }
        if events.iter().any(|e| e.payload.n == self.poison) {
            return Err(HandlerError::permanent("poison"));
        }
        for event in &events {
            ctx.emit_caused_by(
                event,
                Event::new(
                    "Ping",
                    format!("p{}", event.payload.n),
                    Pong { n: event.payload.n },
                ),
            )?;
        }
        if let Ok(mut handled) = self.handled.lock() {
            handled.extend(events.iter().map(|e| e.payload.n));
        }
        Ok(())
    }
}

/// A batch handler gets several events per call in the batched path; the poison event of a
/// failed batch is isolated and fails alone, the others complete once, with what they emitted.
pub async fn batch_handler_gets_batches_and_a_poison_event_fails_alone<S: Inspect>(store: S) {
    let batcher = Batcher {
        poison: 7,
        ..Batcher::default()
    };
    let mut config = fast_config();
    config.events_inbox.handler_transaction = crate::config::HandlerTransaction::Batch;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .handler_concurrency(2)
        .on_event_batch::<Ping, _>("batcher", batcher.clone())
        .build()
        .expect("build");
    // Everything is in the inbox before the workers start, so batches are full.
    let mut dispatch_only = fast_config();
    dispatch_only.events_inbox.enabled = Enabled::Off;
    let outbox_only = Bandeja::builder(store.clone())
        .config(dispatch_only)
        .on_event_batch::<Ping, _>("batcher", batcher.clone())
        .build()
        .expect("build");
    let dispatch = outbox_only.start().await.expect("start");
    let ids = emit_pings(&store, 0..20, |n| format!("k{n}")).await;
    wait_rows(
        &store,
        BoxKind::OutboxEvents,
        all(MessageStatus::Completed, 20),
    )
    .await;
    dispatch.shutdown().await;
    assert_eq!(ids.len(), 20);
    let running = bandeja.start().await.expect("start");
    let inbox = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.len() == 20 && rows.iter().all(|r| r.message.status.is_terminal())
    })
    .await;
    running.shutdown().await;
    let failed: Vec<_> = inbox
        .iter()
        .filter(|r| r.message.status == MessageStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].message.record.payload.contains(":7"));
    let mut handled = batcher.handled.lock().expect("handled").clone();
    handled.sort_unstable();
    assert_eq!(
        handled,
        (0..20).filter(|n| *n != 7).collect::<Vec<_>>(),
        "each good event handled once"
    );
    assert!(
        batcher
            .sizes
            .lock()
            .expect("sizes")
            .iter()
            .any(|size| *size > 1),
        "events came in batches"
    );
    let pongs = rows(&store, BoxKind::OutboxEvents)
        .await
        .into_iter()
        .filter(|r| r.message.record.message_type == Pong::TYPE)
        .count();
    assert_eq!(pongs, 19, "emissions of the rolled-back batch were undone");
}

/// Tenant A has a backlog; tenant B's few messages, emitted after it, complete while A's
/// backlog is still being worked off: claims rotate over the active tenants.
pub async fn a_tenant_backlog_does_not_starve_another_tenant<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Pause(Duration::from_millis(5)));
    let (a, b) = (
        TenantId::new("tenant-a").expect("t"),
        TenantId::new("tenant-b").expect("t"),
    );
    let outbox = crate::emission::Outbox::new(store.clone());
    let emit = |tenant: TenantId, range: std::ops::Range<u64>| {
        let (store, outbox) = (store.clone(), outbox.clone());
        async move {
            let mut tx = store.begin().await.expect("begin");
            for n in range {
                let event =
                    Event::new("Ping", format!("k{n}"), Ping { n }).with_tenant(tenant.clone());
                outbox.emit(&mut *tx, &event).await.expect("emit");
            }
            store.commit(tx).await.expect("commit");
        }
    };
    emit(a.clone(), 0..2000).await;
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit(b.clone(), 10_000..10_020).await;
    let started = std::time::Instant::now();
    let of = |rows: &[RowView], tenant: &TenantId, status: MessageStatus| {
        rows.iter()
            .filter(|r| r.message.record.tenant_id == *tenant && r.message.status == status)
            .count()
    };
    let inbox = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        of(rows, &b, MessageStatus::Completed) == 20
    })
    .await;
    let b_took = started.elapsed();
    let a_done = of(&inbox, &a, MessageStatus::Completed);
    running.shutdown().await;
    assert!(
        a_done < 2000,
        "B waited for A's whole backlog ({a_done} of A's 2000 were done, B took {b_took:?})"
    );
}
