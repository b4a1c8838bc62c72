//! The runtime conformance suite: the whole path (emission → dispatch → in-process transport
//! → inbox → handler in its transaction) on a real store, with
//! [`runtime_conformance_tests!`](crate::runtime_conformance_tests).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Ping;
use crate::config::{Config, ConfigError, Enabled};
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
            always_failing_handler_fails_alone_after_max_retries,
            intermittently_failing_handler_completes_on_a_retry,
            hung_handler_times_out_and_releases_its_lease_while_others_proceed,
            a_retried_hung_message_does_not_hold_up_messages_claimed_with_it,
            a_hung_first_attempt_delays_other_keys_by_at_most_one_backoff,
            cycles_beside_a_straggler_share_the_handler_concurrency,
            handlers_slower_than_the_lease_run_once_each_under_renewed_leases,
            a_fast_subscriber_turned_slow_is_never_stopped_and_holds_up_nobody,
            a_chunk_handing_over_never_waits_for_its_own_permit,
            per_handler_timeout_overrides_the_group_timeout,
            per_handler_timeout_mistakes_are_startup_errors,
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
            a_process_without_a_subscriber_never_fails_its_rows,
            rows_of_a_subscriber_no_process_runs_wait_for_one,
            commands_wait_for_their_registered_handler,
            reception_stores_rows_for_subscriptions_of_other_processes,
            a_process_claims_only_the_types_it_runs_a_subscriber_for,
            a_subscriber_with_an_every_tenant_and_a_tenant_subscription_gets_one_row,
        );
    };
}

mod fleet;
pub use fleet::*;

const WAIT: Duration = Duration::from_secs(20);

/// Short intervals so tests take milliseconds.
pub fn fast_config() -> Config {
    let mut config = Config::default();
    for group in BoxKind::ALL {
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
    /// Every attempt on this payload number fails.
    FailOn(u64),
    /// The first attempts of every message fail (this many), the next one succeeds.
    FailAttempts(u32),
    Hang,
    /// Every attempt on this payload number hangs forever.
    HangOn(u64),
    Pause(Duration),
    /// Every attempt on this payload number takes this long; the others are instant.
    PauseOn(u64, Duration),
}

/// Every attempt a [`Recorder`] saw, in the order they started: (subscriber, payload
/// number, retry count of the row).
type Tried = Arc<Mutex<Vec<(String, u64, u32)>>>;

#[derive(Clone)]
struct Recorder {
    seen: Seen,
    attempts: Arc<Mutex<u32>>,
    tried: Tried,
    behaviour: Behaviour,
    emit_pong: bool,
}

impl Recorder {
    fn new(behaviour: Behaviour) -> Self {
        Recorder {
            seen: Seen::default(),
            attempts: Arc::default(),
            tried: Tried::default(),
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

    /// Every attempt so far, in order.
    fn tried(&self) -> Vec<(String, u64, u32)> {
        self.tried.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// The retry counts of the attempts on payload `n`, in order.
    fn tries_of(&self, n: u64) -> Vec<u32> {
        self.tried()
            .into_iter()
            .filter(|t| t.1 == n)
            .map(|t| t.2)
            .collect()
    }

    /// The payload numbers handled successfully, sorted.
    fn handled(&self) -> Vec<u64> {
        let mut handled: Vec<u64> = self
            .seen
            .lock()
            .map(|s| s.iter().map(|s| s.2).collect())
            .unwrap_or_default();
        handled.sort_unstable();
        handled
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
        if let Ok(mut tried) = self.tried.lock() {
            tried.push((ctx.subscriber().to_owned(), n, ctx.retry_count()));
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
            Behaviour::FailOn(f) if f == n => return Err(format!("always fails on {n}").into()),
            Behaviour::FailAttempts(k) if ctx.retry_count() < k => {
                return Err(format!("flaky: attempt {} fails", ctx.retry_count() + 1).into())
            }
            Behaviour::Hang => std::future::pending::<()>().await,
            Behaviour::HangOn(h) if h == n => std::future::pending::<()>().await,
            Behaviour::Pause(d) => tokio::time::sleep(d).await,
            Behaviour::PauseOn(p, d) if p == n => tokio::time::sleep(d).await,
            _ => {}
        }
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((id, ctx.subscriber().to_owned(), n));
        }
        Ok(())
    }
}

impl<S: Store> EventHandler<S, Ping> for Recorder {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        self.on(ctx, event.id, event.payload.n).await
    }
}

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
    let outbox = crate::runtime::Bandeja::builder(store.clone())
        .build()
        .expect("a runtime to emit with")
        .outbox();
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

/// A panic is a failed attempt; the worker goes on with other messages, and other keys and
/// subscribers are not held up by the panicking one (checked by `poison_fails_alone`).
pub async fn panicking_handler_counts_as_a_failure_and_the_worker_survives<S: Inspect>(store: S) {
    poison_fails_alone(
        store,
        Behaviour::PanicOn(0),
        &["handler panicked", "handler bug on 0"],
    )
    .await;
}

/// A handler that fails on every attempt of one message ends FAILED after `max-retries`
/// with its error; every other message and subscriber completes (checked by
/// `poison_fails_alone`).
pub async fn always_failing_handler_fails_alone_after_max_retries<S: Inspect>(store: S) {
    poison_fails_alone(store, Behaviour::FailOn(0), &["always fails on 0"]).await;
}

/// Subscriber `s` behaves as `poison` on message 0; `other` takes every message. Messages 1
/// and 2 have keys of their own, message 3 shares message 0's key. Checks that:
/// - `(s, 0)` is tried 1 + `max-retries` times and ends FAILED with the error (every part of
///   `error_parts` in `last_error`), its lease released;
/// - every other row completes on its first attempt, each handled once;
/// - the other keys were handled before the poison's first retry (they waited for none of
///   its backoffs), and message 3 only after the poison's last attempt (per-key order: a
///   failing message delays its own key, then releases it when it fails for good).
async fn poison_fails_alone<S: Inspect>(store: S, poison: Behaviour, error_parts: &[&str]) {
    let (s, other) = (Recorder::new(poison), Recorder::new(Behaviour::Succeed));
    let mut config = fast_config();
    config.events_inbox.max_retries = 2;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", s.clone())
        .on_event::<Ping, _>("other", other.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let ids = emit_pings(&store, 0..4, |n| format!("k{}", n % 3)).await;
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.len() == 8 && rows.iter().all(|r| r.message.status.is_terminal())
    })
    .await;
    running.shutdown().await;
    let is_poison =
        |r: &RowView| r.message.subscriber.as_deref() == Some("s") && r.message.record.id == ids[0];
    let poisoned: Vec<_> = rows.iter().filter(|r| is_poison(r)).collect();
    assert_eq!(poisoned.len(), 1);
    let failed = &poisoned[0];
    assert_eq!(
        (
            failed.message.status,
            failed.message.retry_count,
            failed.locked_by.as_deref()
        ),
        (MessageStatus::Failed, 2, None)
    );
    let error = failed.message.last_error.clone().unwrap_or_default();
    for part in error_parts {
        assert!(error.contains(part), "`{part}` not in last_error `{error}`");
    }
    for row in rows.iter().filter(|r| !is_poison(r)) {
        assert_eq!(
            (row.message.status, row.message.retry_count),
            (MessageStatus::Completed, 0),
            "{:?} {}",
            row.message.subscriber,
            row.message.record.payload
        );
    }
    assert_eq!(s.tries_of(0), vec![0, 1, 2], "first attempt + 2 retries");
    assert_eq!(s.handled(), vec![1, 2, 3]);
    assert_eq!(other.handled(), vec![0, 1, 2, 3]);
    let tried = s.tried();
    let position = |n: u64, retry: u32| tried.iter().position(|t| t.1 == n && t.2 == retry);
    let first_retry = position(0, 1).expect("retried");
    let last_attempt = position(0, 2).expect("retried twice");
    for n in [1, 2] {
        assert!(
            position(n, 0).is_some_and(|p| p < first_retry),
            "key k{n} waited for the poison's retries: {tried:?}"
        );
    }
    assert!(
        position(3, 0).is_some_and(|p| p > last_attempt),
        "message 3 overtook the poison of its key: {tried:?}"
    );
}

/// A handler that fails its first attempts completes on a retry: COMPLETED with the retries
/// it took, each message handled (successfully) exactly once.
pub async fn intermittently_failing_handler_completes_on_a_retry<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::FailAttempts(2));
    let mut config = fast_config();
    config.events_inbox.max_retries = 3;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..3, |n| format!("k{n}")).await;
    let rows = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 3),
    )
    .await;
    running.shutdown().await;
    assert!(
        rows.iter().all(|r| r.message.retry_count == 2),
        "{:?}",
        rows.iter()
            .map(|r| r.message.retry_count)
            .collect::<Vec<_>>()
    );
    for n in 0..3 {
        assert_eq!(recorder.tries_of(n), vec![0, 1, 2], "message {n}");
    }
    assert_eq!(recorder.handled(), vec![0, 1, 2], "each handled once");
}

/// A handler that hangs, with a per-handler timeout far below the group's limit (here the
/// lease, `lock-at-most-for` = 10 s): each attempt is stopped after its own limit and fails
/// with a timeout error; the row goes back to PENDING with its lease released, long before
/// the lease would have expired, then FAILED after `max-retries`. Meanwhile messages of
/// other keys and of another tenant, emitted while it hangs, are handled: delayed at most by
/// the hung attempt in progress, a polling interval and a backoff, never by the lease.
pub async fn hung_handler_times_out_and_releases_its_lease_while_others_proceed<S: Inspect>(
    store: S,
) {
    let limit = Duration::from_millis(300);
    let backoff = Duration::from_millis(250);
    let recorder = Recorder::new(Behaviour::HangOn(0));
    let mut config = fast_config();
    config.events_inbox.max_retries = 1;
    config.events_inbox.retry_backoff_initial = backoff;
    config.events_inbox.retry_backoff_max = backoff;
    let lease = config.events_inbox.lock_at_most_for;
    let polling = config.events_inbox.polling_interval;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("stuck", recorder.clone())
        .handler_timeout("stuck", limit)
        .build()
        .expect("build");
    assert_eq!(
        bandeja
            .config()
            .events_inbox
            .effective_handler_timeout(Some("stuck")),
        limit
    );
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k0".into()).await;
    eventually(WAIT, || async { (recorder.attempts() == 1).then_some(()) })
        .await
        .expect("the handler started hanging");
    let hung_at = std::time::Instant::now();
    let other_tenant = TenantId::new("tenant-b").expect("tenant");
    let outbox = crate::runtime::Bandeja::builder(store.clone())
        .build()
        .expect("a runtime to emit with")
        .outbox();
    let mut tx = store.begin().await.expect("begin");
    let healthy = [
        Event::new("Ping", "k1", Ping { n: 1 }),
        Event::new("Ping", "k2", Ping { n: 2 }).with_tenant(other_tenant.clone()),
    ];
    for event in &healthy {
        outbox.emit(&mut *tx, event).await.expect("emit");
    }
    store.commit(tx).await.expect("commit");
    let emitted_at = std::time::Instant::now();
    let is_hung =
        |r: &RowView| r.message.record.id != healthy[0].id && r.message.record.id != healthy[1].id;
    let (healthy_took, released) = tokio::join!(
        async {
            wait_rows(&store, BoxKind::InboxEvents, |rows| {
                rows.iter()
                    .filter(|r| !is_hung(r))
                    .filter(|r| r.message.status == MessageStatus::Completed)
                    .count()
                    == 2
            })
            .await;
            emitted_at.elapsed()
        },
        async {
            let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
                rows.iter().any(|r| {
                    is_hung(r)
                        && r.message.status == MessageStatus::Pending
                        && r.message.retry_count == 1
                })
            })
            .await;
            (hung_at.elapsed(), rows.into_iter().find(|r| is_hung(r)))
        }
    );
    let (released_after, released) = released;
    let released = released.expect("the hung row");
    assert_eq!(released.locked_by, None, "the lease was released");
    let error = released.message.last_error.clone().unwrap_or_default();
    assert!(
        error.contains("timed out after PT0.3S")
            && error.contains("events.inbox.handler-timeouts.stuck"),
        "{error}"
    );
    assert!(
        released_after < lease / 4,
        "the hung attempt was stopped after {released_after:?}, the lease is {lease:?}"
    );
    let bound = limit + polling + backoff + Duration::from_millis(500);
    assert!(
        healthy_took < bound,
        "healthy messages took {healthy_took:?} (bound {bound:?}: the hung attempt in progress, a polling interval, a backoff and a margin)"
    );
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.iter()
            .any(|r| is_hung(r) && r.message.status == MessageStatus::Failed)
    })
    .await;
    let failed_after = hung_at.elapsed();
    running.shutdown().await;
    let failed = rows.iter().find(|r| is_hung(r)).expect("the hung row");
    assert_eq!(
        (failed.message.retry_count, failed.locked_by.as_deref()),
        (1, None)
    );
    assert!(failed
        .message
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("timed out after PT0.3S")));
    assert!(
        failed_after < lease / 2,
        "two hung attempts took {failed_after:?}: each must end at its own limit, not at the lease ({lease:?})"
    );
    assert_eq!(recorder.tries_of(0), vec![0, 1]);
    assert_eq!(recorder.handled(), vec![1, 2]);
    let tenants: Vec<_> = rows
        .iter()
        .filter(|r| !is_hung(r))
        .map(|r| r.message.record.inbox_tenant().clone())
        .collect();
    assert!(tenants.contains(&other_tenant), "{tenants:?}");
}

/// A first attempt that hangs (its limit far away) delays the other keys and tenants of its
/// process by at most one backoff: those claimed with it (in its batched transaction on
/// PostgreSQL, beside it on SQLite) and those emitted while it hangs (a later claim of the
/// same worker) all complete within the patience (`retry-backoff-initial`, 1 s) and a
/// margin, each once, while the hung one has spent no retry.
pub async fn a_hung_first_attempt_delays_other_keys_by_at_most_one_backoff<S: Inspect>(store: S) {
    let limit = Duration::from_secs(6);
    let backoff = Duration::from_secs(1);
    let recorder = Recorder::new(Behaviour::HangOn(0));
    let mut config = fast_config();
    config.events_inbox.lock_at_most_for = Duration::from_secs(8);
    config.events_inbox.retry_backoff_initial = backoff;
    config.events_inbox.retry_backoff_max = backoff;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .handler_timeout("s", limit)
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    // The hung message and ten healthy ones (other keys), emitted together: claimed
    // together.
    let first_at = std::time::Instant::now();
    emit_pings(&store, 0..11, |n| format!("k{n}")).await;
    eventually(WAIT, || async {
        (!recorder.tries_of(0).is_empty()).then_some(())
    })
    .await
    .expect("the handler started hanging");
    // Ten more while it hangs, of another tenant: a later claim.
    let other_tenant = TenantId::new("tenant-b").expect("tenant");
    let outbox = crate::runtime::Bandeja::builder(store.clone())
        .build()
        .expect("a runtime to emit with")
        .outbox();
    let mut tx = store.begin().await.expect("begin");
    for n in 11..21 {
        let event =
            Event::new("Ping", format!("k{n}"), Ping { n }).with_tenant(other_tenant.clone());
        outbox.emit(&mut *tx, &event).await.expect("emit");
    }
    store.commit(tx).await.expect("commit");
    let later_at = std::time::Instant::now();
    let done = |rows: &[RowView], from: u64, to: u64| {
        rows.iter()
            .filter(|r| r.message.status == MessageStatus::Completed)
            .filter(|r| (from..to).contains(&ping_number(r)))
            .count()
            == usize::try_from(to - from).unwrap_or_default()
    };
    let (first_took, later_took) = tokio::join!(
        async {
            wait_rows(&store, BoxKind::InboxEvents, |rows| done(rows, 1, 11)).await;
            first_at.elapsed()
        },
        async {
            wait_rows(&store, BoxKind::InboxEvents, |rows| done(rows, 11, 21)).await;
            later_at.elapsed()
        }
    );
    let rows = rows(&store, BoxKind::InboxEvents).await;
    running.shutdown().await;
    let bound = backoff + Duration::from_millis(1500);
    assert!(
        first_took < bound && later_took < bound,
        "healthy messages claimed with the hung one took {first_took:?}, those emitted while it hung {later_took:?}: bound {bound:?} (one backoff and a margin); the hung attempt's limit is {limit:?}"
    );
    let hung = rows
        .iter()
        .find(|r| ping_number(r) == 0)
        .expect("the hung row");
    assert_ne!(hung.message.status, MessageStatus::Completed);
    assert_eq!(
        recorder.handled(),
        (1..21).collect::<Vec<_>>(),
        "each healthy message once"
    );
    let tries = recorder.tries_of(0);
    assert!(
        !tries.is_empty() && tries.len() <= 2 && tries.iter().all(|&retry| retry == 0),
        "the hung message was tried {tries:?} (retry counts): at most once in a batch and once alone, no retry spent"
    );
    let tenants: Vec<_> = rows
        .iter()
        .map(|r| r.message.record.inbox_tenant().clone())
        .collect();
    assert!(tenants.contains(&other_tenant), "{tenants:?}");
}

/// Handlers slower than their lease (2.5 s against a lease of 2 s), none failing: the
/// lease is renewed while they run, so each message is handled exactly once, concurrently,
/// with no retry spent and no takeover; no handler is stopped before its own limit.
pub async fn handlers_slower_than_the_lease_run_once_each_under_renewed_leases<S: Inspect>(
    store: S,
) {
    let pause = Duration::from_millis(2500);
    let recorder = Recorder::new(Behaviour::Pause(pause));
    let mut config = fast_config();
    config.events_inbox.lock_at_most_for = Duration::from_secs(2);
    config.events_inbox.retry_backoff_initial = Duration::from_secs(1);
    config.events_inbox.retry_backoff_max = Duration::from_secs(1);
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("slow", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let started = std::time::Instant::now();
    emit_pings(&store, 0..4, |n| format!("k{n}")).await;
    let rows = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 4),
    )
    .await;
    let took = started.elapsed();
    running.shutdown().await;
    assert_eq!(recorder.handled(), vec![0, 1, 2, 3], "each completed once");
    assert!(
        (0..4).all(|n| recorder.tries_of(n).len() == 1),
        "each message entered once: {:?}",
        recorder.tried()
    );
    assert!(
        rows.iter()
            .all(|r| r.message.retry_count == 0 && r.message.takeovers == 0),
        "no retry spent, no takeover: {:?}",
        rows.iter()
            .map(|r| (r.message.retry_count, r.message.takeovers))
            .collect::<Vec<_>>()
    );
    assert!(
        took < pause * 2,
        "the four ran side by side: {took:?} (each takes {pause:?})"
    );
}

/// A subscriber measured fast runs batched; when one of its messages turns out slow
/// (3 s, longer than the patience) inside a batched transaction, it is not stopped: it
/// runs once, to the end, and the messages of its chunk not started yet are handed over
/// to run alone beside it, within the patience.
pub async fn a_fast_subscriber_turned_slow_is_never_stopped_and_holds_up_nobody<S: Inspect>(
    store: S,
) {
    let slow = Duration::from_secs(3);
    let recorder = Recorder::new(Behaviour::PauseOn(20, slow));
    let mut config = fast_config();
    config.events_inbox.retry_backoff_initial = Duration::from_secs(1);
    config.events_inbox.retry_backoff_max = Duration::from_secs(1);
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    // Measured fast first.
    emit_pings(&store, 0..20, |n| format!("k{n}")).await;
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 20),
    )
    .await;
    let emitted_at = std::time::Instant::now();
    emit_pings(&store, 20..40, |n| format!("k{n}")).await;
    let done = |rows: &[RowView], from: u64, to: u64| {
        rows.iter()
            .filter(|r| r.message.status == MessageStatus::Completed)
            .filter(|r| (from..to).contains(&ping_number(r)))
            .count()
            == usize::try_from(to - from).unwrap_or_default()
    };
    wait_rows(&store, BoxKind::InboxEvents, |rows| done(rows, 21, 40)).await;
    let others_took = emitted_at.elapsed();
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| done(rows, 0, 40)).await;
    running.shutdown().await;
    assert!(
        others_took < Duration::from_millis(2500),
        "the messages beside the slow one took {others_took:?}: bound one patience (1 s) and a margin"
    );
    assert_eq!(
        recorder.tries_of(20),
        vec![0],
        "the slow one ran once, to the end"
    );
    assert_eq!(recorder.handled(), (0..40).collect::<Vec<_>>());
    assert!(rows.iter().all(|r| r.message.retry_count == 0));
}

/// With one handler permit, a batched chunk whose first handler is slow (2 s, past the
/// patience) hands the rest over; the chunk gives its permit back as soon as its own run
/// ends, so the handed-over messages get it and complete (they never wait for a permit the
/// chunk keeps while waiting for them).
pub async fn a_chunk_handing_over_never_waits_for_its_own_permit<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::PauseOn(0, Duration::from_secs(2)));
    let mut config = fast_config();
    config.events_inbox.retry_backoff_initial = Duration::from_secs(1);
    config.events_inbox.retry_backoff_max = Duration::from_secs(1);
    config.events_inbox.handler_transaction = crate::config::HandlerTransaction::Batch;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .handler_concurrency(1)
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    emit_pings(&store, 0..6, |n| format!("k{n}")).await;
    let running = bandeja.start().await.expect("start");
    let rows = wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 6),
    )
    .await;
    running.shutdown().await;
    assert_eq!(recorder.handled(), (0..6).collect::<Vec<_>>());
    assert_eq!(
        recorder.tries_of(0),
        vec![0],
        "the slow one ran once, to the end"
    );
    assert!(rows.iter().all(|r| r.message.retry_count == 0));
}

/// Counts the handlers running at once; hangs on payload 0, takes a while on the others.
#[derive(Clone, Default)]
struct Gauge {
    running: Arc<Mutex<(usize, usize)>>,
    handled: Arc<Mutex<Vec<u64>>>,
}

/// One handler running, for as long as it lives (also when its attempt is stopped).
struct Running(Arc<Mutex<(usize, usize)>>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(mut running) = self.0.lock() {
            running.0 -= 1;
        }
    }
}

impl Gauge {
    fn enter(&self) -> Running {
        if let Ok(mut running) = self.running.lock() {
            running.0 += 1;
            running.1 = running.1.max(running.0);
        }
        Running(self.running.clone())
    }

    fn most_at_once(&self) -> usize {
        self.running.lock().map(|r| r.1).unwrap_or_default()
    }
}

impl<S: Store> EventHandler<S, Ping> for Gauge {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        let _running = self.enter();
        if event.payload.n == 0 {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let Ok(mut handled) = self.handled.lock() {
            handled.push(event.payload.n);
        }
        Ok(())
    }
}

/// While a hung handler keeps its cycle open, the worker claims beside it, but the cycles
/// share the handler concurrency: never more handlers run at once than configured, and
/// every healthy message is still handled once.
pub async fn cycles_beside_a_straggler_share_the_handler_concurrency<S: Inspect>(store: S) {
    let gauge = Gauge::default();
    let mut config = fast_config();
    config.events_inbox.lock_at_most_for = Duration::from_secs(4);
    config.events_inbox.retry_backoff_initial = Duration::from_secs(1);
    config.events_inbox.retry_backoff_max = Duration::from_secs(1);
    // One transaction per message, so that each handler holds a permit of its own.
    config.events_inbox.handler_transaction = crate::config::HandlerTransaction::Message;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .handler_concurrency(2)
        .on_event::<Ping, _>("s", gauge.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..4, |n| format!("k{n}")).await;
    eventually(WAIT, || async { (gauge.most_at_once() > 0).then_some(()) })
        .await
        .expect("the handlers started");
    emit_pings(&store, 4..10, |n| format!("k{n}")).await;
    eventually(WAIT, || async {
        let handled = gauge.handled.lock().map(|h| h.len()).unwrap_or_default();
        (handled == 9).then_some(())
    })
    .await
    .expect("every healthy message handled");
    running.shutdown().await;
    let mut handled = gauge.handled.lock().expect("handled").clone();
    handled.sort_unstable();
    assert_eq!(
        handled,
        (1..10).collect::<Vec<_>>(),
        "each healthy message once"
    );
    assert_eq!(
        gauge.most_at_once(),
        2,
        "handlers running at once, the hung one included (handler concurrency 2)"
    );
}

/// The payload number of a `Ping` row.
fn ping_number(row: &RowView) -> u64 {
    serde_json::from_str::<Ping>(&row.message.record.payload).map_or(u64::MAX, |p| p.n)
}

/// A message that already failed once and hangs again does not hold up the healthy messages
/// claimed with it (other keys, another tenant): they complete while its attempt is still
/// running, well before its time limit, on every store and transaction mode.
pub async fn a_retried_hung_message_does_not_hold_up_messages_claimed_with_it<S: Inspect>(
    store: S,
) {
    let limit = Duration::from_secs(1);
    let recorder = Recorder::new(Behaviour::HangOn(0));
    // The inbox as a previous attempt left it: the hung message PENDING with one retry
    // spent, and two healthy messages (one of another tenant) due with it.
    let mut healthy = [super::ping(1, "k1"), super::ping(2, "k2")];
    healthy[1].tenant_id = TenantId::new("tenant-b").expect("tenant");
    let hung = super::ping(0, "k0");
    let subscribers = vec!["stuck".to_owned()];
    for record in std::iter::once(&hung).chain(&healthy) {
        let delivery = Delivery {
            record,
            subscribers: &subscribers,
        };
        store
            .receive(crate::MessageKind::Event, &[delivery])
            .await
            .expect("receive");
    }
    let request = crate::store::ClaimRequest {
        worker_id: "earlier",
        limit: 1,
        lease: Duration::from_secs(30),
        ordered: true,
        from_seq: None,
        tenant: None,
        subscribers: None,
    };
    let earlier = store
        .claim(BoxKind::InboxEvents, &request)
        .await
        .expect("claim");
    assert_eq!(earlier.len(), 1);
    assert_eq!(earlier[0].record.id, hung.id);
    let retry = crate::store::Outcome {
        id: hung.id,
        subscriber: Some("stuck".to_owned()),
        resolution: crate::store::Resolution::Retry {
            retry_count: 1,
            delay: Duration::ZERO,
            error: "hung before".to_owned(),
        },
    };
    store
        .resolve(BoxKind::InboxEvents, "earlier", &[retry])
        .await
        .expect("resolve");
    let mut config = fast_config();
    config.events_inbox.max_retries = 1;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("stuck", recorder.clone())
        .handler_timeout("stuck", limit)
        .build()
        .expect("build");
    let started = std::time::Instant::now();
    let running = bandeja.start().await.expect("start");
    let healthy_ids = [healthy[0].id, healthy[1].id];
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.iter()
            .filter(|r| healthy_ids.contains(&r.message.record.id))
            .all(|r| r.message.status == MessageStatus::Completed)
    })
    .await;
    let healthy_took = started.elapsed();
    let hung_row = rows
        .iter()
        .find(|r| r.message.record.id == hung.id)
        .expect("hung row");
    assert!(
        healthy_took < limit && hung_row.message.status == MessageStatus::Processing,
        "the healthy messages took {healthy_took:?}, the hung one is {:?}: they waited for its attempt (limit {limit:?})",
        hung_row.message.status
    );
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.iter()
            .any(|r| r.message.record.id == hung.id && r.message.status == MessageStatus::Failed)
    })
    .await;
    running.shutdown().await;
    let hung_row = rows
        .iter()
        .find(|r| r.message.record.id == hung.id)
        .expect("hung row");
    assert!(hung_row
        .message
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("timed out after PT1S")));
    assert_eq!(recorder.tries_of(0), vec![1]);
    assert_eq!(recorder.handled(), vec![1, 2]);
}

/// A subscriber's own time limit (here from the configuration, `handler-timeouts`) overrides
/// the group's `handler-timeout` for that subscriber only: on the same slow handler, the
/// subscriber with a short limit times out (and ends FAILED), the one on the group's longer
/// limit completes.
pub async fn per_handler_timeout_overrides_the_group_timeout<S: Inspect>(store: S) {
    let slow = Behaviour::Pause(Duration::from_millis(500));
    let (patient, impatient) = (Recorder::new(slow), Recorder::new(slow));
    let mut config = fast_config();
    config.events_inbox.max_retries = 1;
    config.events_inbox.handler_timeout = Duration::from_secs(3);
    config.events_inbox = config
        .events_inbox
        .handler_timeout_for("impatient", Duration::from_millis(150));
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("patient", patient.clone())
        .on_event::<Ping, _>("impatient", impatient.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.len() == 2 && rows.iter().all(|r| r.message.status.is_terminal())
    })
    .await;
    running.shutdown().await;
    let row = |name: &str| {
        rows.iter()
            .find(|r| r.message.subscriber.as_deref() == Some(name))
            .expect("row")
    };
    let (done, failed) = (row("patient"), row("impatient"));
    assert_eq!(
        (done.message.status, done.message.retry_count),
        (MessageStatus::Completed, 0)
    );
    assert_eq!(
        (failed.message.status, failed.message.retry_count),
        (MessageStatus::Failed, 1)
    );
    let error = failed.message.last_error.clone().unwrap_or_default();
    assert!(
        error.contains("timed out after PT0.15S")
            && error.contains("events.inbox.handler-timeouts.impatient"),
        "{error}"
    );
    assert_eq!(patient.handled(), vec![0]);
    assert_eq!(impatient.tries_of(0), vec![0, 1]);
    assert!(
        impatient.handled().is_empty(),
        "no attempt finished in time"
    );
}

/// Per-handler time limits are checked at startup: a subscriber name no handler is
/// registered under (in code or in the configuration) and a zero limit are errors naming
/// the setting; a configuration entry takes precedence over the builder's.
pub async fn per_handler_timeout_mistakes_are_startup_errors<S: Inspect>(store: S) {
    let build = |config: Config, code: Option<(&str, Duration)>| {
        let mut builder = Bandeja::builder(store.clone())
            .config(config)
            .on_event::<Ping, _>("s", Recorder::new(Behaviour::Succeed));
        if let Some((name, timeout)) = code {
            builder = builder.handler_timeout(name, timeout);
        }
        builder.build()
    };
    let rejected = |result: crate::error::Result<Bandeja<S>>| {
        let error = result.err().expect("build must fail");
        let text = error.to_string();
        match error {
            Error::Config(ConfigError::InvalidValue { key, .. }) => (key, text),
            other => panic!("expected an invalid value, got {other}"),
        }
    };
    let second = Duration::from_secs(1);
    let (key, message) = rejected(build(Config::default(), Some(("ghost", second))));
    assert_eq!(key, "BandejaBuilder::handler_timeout(\"ghost\")");
    assert!(
        message.contains(
            "no handler is registered under the subscriber name `ghost` (registered: `s`)"
        ),
        "{message}"
    );
    let (key, message) = rejected(build(Config::default(), Some(("s", Duration::ZERO))));
    assert!(
        key.contains("(\"s\")") && message.contains("greater than zero"),
        "{message}"
    );
    let with = |group: BoxKind, name: &str, timeout: Duration| {
        let mut config = Config::default();
        let settings = config.group_mut(group);
        *settings = settings.clone().handler_timeout_for(name, timeout);
        config
    };
    let cases = [
        (
            with(BoxKind::InboxEvents, "ghost", second),
            "events.inbox.handler-timeouts.ghost",
            "no event handler is registered under the subscriber name `ghost`",
        ),
        (
            with(BoxKind::InboxCommands, "s", second),
            "commands.inbox.handler-timeouts.s",
            "no command handler is registered under the subscriber name `s`",
        ),
        (
            with(BoxKind::InboxEvents, "s", Duration::ZERO),
            "events.inbox.handler-timeouts.s",
            "greater than zero",
        ),
        (
            with(BoxKind::OutboxEvents, "s", second),
            "events.outbox.handler-timeouts.s",
            "an outbox has no subscribers",
        ),
    ];
    for (config, expected_key, reason) in cases {
        let (key, message) = rejected(build(config, None));
        assert_eq!(key, expected_key);
        assert!(message.contains(reason), "{message}");
    }
    let configured = with(BoxKind::InboxEvents, "s", Duration::from_secs(2));
    let bandeja = build(configured, Some(("s", second))).expect("build");
    assert_eq!(
        bandeja.config().events_inbox.handler_timeouts.get("s"),
        Some(&Duration::from_secs(2)),
        "the configuration's entry wins over the builder's"
    );
    let bandeja = build(Config::default(), Some(("s", second))).expect("build");
    let inbox = &bandeja.config().events_inbox;
    assert_eq!(inbox.effective_handler_timeout(Some("s")), second);
    assert_eq!(
        inbox.effective_handler_timeout(Some("unnamed")),
        inbox.handler_timeout,
        "without an entry, the group's handler-timeout (PT5M), not capped by the lease (PT20S): the lease is renewed"
    );
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
    let outbox = crate::runtime::Bandeja::builder(store.clone())
        .build()
        .expect("a runtime to emit with")
        .outbox();
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
    for group in BoxKind::ALL {
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
    // The second copy of a message may arrive after the first was handled: wait for both.
    let completed = all(MessageStatus::Completed, 5);
    let inbox = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        completed(rows) && rows.iter().all(|r| r.message.delivery_count >= 2)
    })
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
    let outbox = crate::runtime::Bandeja::builder(store.clone())
        .build()
        .expect("a runtime to emit with")
        .outbox();
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
