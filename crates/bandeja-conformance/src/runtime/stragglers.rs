//! Stragglers: a hung message holds up neither the messages claimed with it nor those of
//! other keys and tenants, and the cycles the worker opens beside it share the handler
//! concurrency.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_core::envelope::Event;
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Delivery, Inspect, RowView, Store};
use bandeja_core::tenant::TenantId;
use bandeja_core::testing::eventually;

use super::recorder::{Behaviour, Recorder};
use super::{emit_pings, ping_number, rows, wait_rows, WAIT};
use crate::fixtures::outbox_of;
use crate::fixtures::{fast_config, Ping};

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
    let mut healthy = [crate::store::ping(1, "k1"), crate::store::ping(2, "k2")];
    healthy[1].tenant_id = TenantId::new("tenant-b").expect("tenant");
    let hung = crate::store::ping(0, "k0");
    let subscribers = vec!["stuck".to_owned()];
    for record in std::iter::once(&hung).chain(&healthy) {
        let delivery = Delivery {
            record,
            subscribers: &subscribers,
        };
        store
            .receive(bandeja_core::MessageKind::Event, &[delivery])
            .await
            .expect("receive");
    }
    let request = bandeja_core::store::ClaimRequest {
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
    let retry = bandeja_core::store::Outcome {
        id: hung.id,
        subscriber: Some("stuck".to_owned()),
        resolution: bandeja_core::store::Resolution::Retry {
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
    let outbox = outbox_of(&store);
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
    config.events_inbox.handler_transaction = bandeja_core::config::HandlerTransaction::Message;
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
