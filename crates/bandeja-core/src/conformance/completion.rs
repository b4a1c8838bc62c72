//! The completion conformance suite: completion modes (`update`, `delete`, `archive`) on
//! the four boxes through the real runtime, inbox dedup after a row was deleted or
//! archived, retention and the staleness monitor, with
//! [`completion_conformance_tests!`](crate::completion_conformance_tests).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::runtime::{fast_config, Archive};
use super::{emit, ping, request, rows, Ping};
use crate::config::{CompletionMode, Config, Enabled, HandlerTransaction};
use crate::envelope::{Command, Event};
use crate::error::HandlerError;
use crate::processing::{CommandHandler, EventHandler, HandlerContext};
use crate::record::{BoxKind, MessageKind, StoredMessage};
use crate::runtime::Bandeja;
use crate::status::MessageStatus;
use crate::store::{Delivery, Inspect, Outcome, Resolution, RowView, StaleRequest, Store};
use crate::tenant::{self, TenantId};
use crate::testing::eventually;

/// Generates one `#[tokio::test]` per completion check; `$make` as for
/// [`store_conformance_tests!`](crate::store_conformance_tests).
#[macro_export]
macro_rules! completion_conformance_tests {
    ($make:path) => {
        $crate::store_conformance_tests!(@tests_in completion $make;
            update_mode_keeps_completed_rows_in_every_box,
            delete_mode_removes_completed_rows_from_every_box,
            archive_mode_moves_completed_rows_into_the_archives,
            redelivery_after_delete_is_absorbed_until_the_window_passes,
            redelivery_after_archive_is_absorbed_until_the_window_passes,
            retention_purges_old_completed_rows_only,
            retention_task_purges_completed_rows_in_the_runtime,
            staleness_marks_pending_and_processing_rows_failed_with_the_reason,
            staleness_monitor_runs_in_the_runtime,
        );
    };
}

const WAIT: Duration = Duration::from_secs(20);

async fn claim<S: Store>(store: &S, box_kind: BoxKind, limit: usize) -> Vec<StoredMessage> {
    store
        .claim(box_kind, &request("w", limit))
        .await
        .expect("claim")
}

/// Counts what it handles.
#[derive(Clone, Default)]
struct Counter(Arc<Mutex<Vec<u64>>>);

impl Counter {
    fn seen(&self) -> Vec<u64> {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn record(&self, n: u64) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(n);
        }
    }
}

impl<S: Store> EventHandler<S, Ping> for Counter {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        self.record(event.payload.n);
        Ok(())
    }
}

impl<S: Store> CommandHandler<S, Archive> for Counter {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        command: Command<Archive>,
    ) -> Result<(), HandlerError> {
        self.record(command.payload.n);
        Ok(())
    }
}

/// `fast_config` with `mode` on every box; the event inbox completes one transaction per
/// message, the command inbox one per batch, so both completion paths run.
fn config_with(mode: CompletionMode) -> Config {
    let mut config = fast_config();
    for group in BoxKind::ALL {
        config.group_mut(group).completion_mode = mode;
    }
    config.events_inbox.handler_transaction = HandlerTransaction::Message;
    config.commands_inbox.handler_transaction = HandlerTransaction::Batch;
    config
}

async fn archived<S: Inspect>(store: &S, box_kind: BoxKind) -> Vec<RowView> {
    store.archived_rows(box_kind).await.expect("archived rows")
}

/// Emits one event and sends one command through `bandeja`'s store, runs until both were
/// handled and no live row is left, and checks that the handler saw each once.
async fn run_one_of_each<S: Inspect>(store: &S, mode: CompletionMode) {
    let counter = Counter::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(config_with(mode))
        .on_event::<Ping, _>("s", counter.clone())
        .on_command::<Archive, _>("archiver", counter.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    bandeja
        .emit(&Event::new("Ping", "k", Ping { n: 1 }))
        .await
        .expect("emit");
    let command = tenant::scope(TenantId::default_tenant(), async {
        Command::to_self("archiver", Archive { n: 2 })
    })
    .await
    .expect("command");
    bandeja.send(&command).await.expect("send");
    let mut seen = eventually(WAIT, || async {
        let seen = counter.seen();
        (seen.len() == 2).then_some(seen)
    })
    .await
    .expect("both handled");
    let settled = |rows: &[RowView]| {
        rows.iter().all(|r| {
            !matches!(
                r.message.status,
                MessageStatus::Pending | MessageStatus::Processing
            )
        })
    };
    for box_kind in BoxKind::ALL {
        super::runtime::wait_rows(store, box_kind, settled).await;
    }
    running.shutdown().await;
    seen.sort_unstable();
    assert_eq!(seen, vec![1, 2]);
}

/// `update`: every box keeps its row, COMPLETED with a completion time; nothing archived.
pub async fn update_mode_keeps_completed_rows_in_every_box<S: Inspect>(store: S) {
    run_one_of_each(&store, CompletionMode::Update).await;
    for box_kind in BoxKind::ALL {
        let rows = rows(&store, box_kind).await;
        assert_eq!(rows.len(), 1, "{box_kind}");
        assert_eq!(
            rows[0].message.status,
            MessageStatus::Completed,
            "{box_kind}"
        );
        assert!(rows[0].completed_at.is_some(), "{box_kind}");
        assert!(archived(&store, box_kind).await.is_empty(), "{box_kind}");
    }
}

/// `delete`: every box is empty once its rows completed; nothing archived.
pub async fn delete_mode_removes_completed_rows_from_every_box<S: Inspect>(store: S) {
    run_one_of_each(&store, CompletionMode::Delete).await;
    for box_kind in BoxKind::ALL {
        assert!(rows(&store, box_kind).await.is_empty(), "{box_kind}");
        assert!(archived(&store, box_kind).await.is_empty(), "{box_kind}");
    }
}

/// `archive`: every box is empty and its archive holds the row, COMPLETED, unlocked.
pub async fn archive_mode_moves_completed_rows_into_the_archives<S: Inspect>(store: S) {
    run_one_of_each(&store, CompletionMode::Archive).await;
    for box_kind in BoxKind::ALL {
        assert!(rows(&store, box_kind).await.is_empty(), "{box_kind}");
        let archive = archived(&store, box_kind).await;
        assert_eq!(archive.len(), 1, "{box_kind}");
        let row = &archive[0];
        assert_eq!(row.message.status, MessageStatus::Completed, "{box_kind}");
        assert!(row.completed_at.is_some(), "{box_kind}");
        assert_eq!(row.locked_by, None, "{box_kind}");
        let expected = if box_kind.is_inbox() {
            Some(if box_kind.kind() == MessageKind::Event {
                "s".to_owned()
            } else {
                "archiver".to_owned()
            })
        } else {
            None
        };
        assert_eq!(row.message.subscriber, expected, "{box_kind}");
    }
}

/// `delete`: a redelivery is absorbed after the row was deleted, until the window passes.
pub async fn redelivery_after_delete_is_absorbed_until_the_window_passes<S: Inspect>(store: S) {
    redelivery_is_absorbed(store, CompletionMode::Delete).await;
}

/// `archive`: a redelivery is absorbed after the row was archived, until the window passes.
pub async fn redelivery_after_archive_is_absorbed_until_the_window_passes<S: Inspect>(store: S) {
    redelivery_is_absorbed(store, CompletionMode::Archive).await;
}

/// The inbox row is gone after completion, yet a redelivery of the same `(id, subscriber)`
/// is a duplicate and never reaches the handler again — until retention removes the dedup
/// record: then it is a new message (documented in `docs/operations.md`).
async fn redelivery_is_absorbed<S: Inspect>(store: S, mode: CompletionMode) {
    let counter = Counter::default();
    let mut config = config_with(mode);
    config.events_outbox.enabled = Enabled::Off; // deliveries come "from a broker"
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", counter.clone())
        .build()
        .expect("build");
    let store = bandeja.store().clone(); // the handle configured with the modes
    let running = bandeja.start().await.expect("start");
    let record = ping(7, "k");
    let subscribers = vec!["s".to_owned()];
    let deliver = || async {
        let delivery = Delivery {
            record: &record,
            subscribers: &subscribers,
        };
        let report = store
            .receive(MessageKind::Event, &[delivery])
            .await
            .expect("receive");
        store.wakers().wake(BoxKind::InboxEvents);
        (report.inserted, report.duplicates)
    };
    assert_eq!(deliver().await, (1, 0));
    super::runtime::wait_rows(&store, BoxKind::InboxEvents, |rows| rows.is_empty()).await;
    assert_eq!(counter.seen(), vec![7]);

    // Redelivered twice after its row was removed: absorbed, no new row.
    assert_eq!(deliver().await, (0, 1));
    assert_eq!(deliver().await, (0, 1));
    // A marker handled after any redelivery would have been.
    let marker = ping(8, "k");
    let report = store
        .receive(
            MessageKind::Event,
            &[Delivery {
                record: &marker,
                subscribers: &subscribers,
            }],
        )
        .await
        .expect("receive");
    assert_eq!(report.inserted, 1);
    store.wakers().wake(BoxKind::InboxEvents);
    eventually(WAIT, || async { (counter.seen().len() == 2).then_some(()) })
        .await
        .expect("marker handled");
    super::runtime::wait_rows(&store, BoxKind::InboxEvents, |rows| rows.is_empty()).await;
    assert_eq!(counter.seen(), vec![7, 8]);
    let archived_ids: Vec<_> = archived(&store, BoxKind::InboxEvents)
        .await
        .iter()
        .map(|r| r.message.record.id)
        .collect();
    if mode == CompletionMode::Archive {
        assert_eq!(archived_ids, vec![record.id, marker.id]);
    } else {
        assert!(archived_ids.is_empty());
    }

    // Past the retention window the dedup record is gone: a redelivery is a new message.
    let purged = store
        .purge_completed(BoxKind::InboxEvents, Duration::ZERO)
        .await
        .expect("purge");
    assert_eq!(purged, 2, "the two dedup records");
    assert_eq!(deliver().await, (1, 0));
    eventually(WAIT, || async { (counter.seen().len() == 3).then_some(()) })
        .await
        .expect("handled again");
    running.shutdown().await;
    assert_eq!(counter.seen(), vec![7, 8, 7]);
}

/// Purge removes COMPLETED rows completed at least the given age ago, never younger ones,
/// FAILED or live rows.
pub async fn retention_purges_old_completed_rows_only<S: Inspect>(store: S) {
    let records: Vec<_> = (0..4).map(|n| ping(n, &format!("k{n}"))).collect();
    emit(&store, &records).await;
    let claimed = claim(&store, BoxKind::OutboxEvents, 3).await;
    let outcomes: Vec<Outcome> = claimed
        .iter()
        .map(|m| Outcome {
            id: m.record.id,
            subscriber: None,
            resolution: if m.record.id == records[2].id {
                Resolution::Failed {
                    retry_count: 0,
                    error: "kept".into(),
                }
            } else {
                Resolution::Completed
            },
        })
        .collect();
    store
        .resolve(BoxKind::OutboxEvents, "w", &outcomes)
        .await
        .expect("resolve");
    let young = store
        .purge_completed(BoxKind::OutboxEvents, Duration::from_secs(3_600))
        .await
        .expect("purge");
    assert_eq!(young, 0, "rows completed just now are younger than an hour");
    assert_eq!(rows(&store, BoxKind::OutboxEvents).await.len(), 4);
    let purged = store
        .purge_completed(BoxKind::OutboxEvents, Duration::ZERO)
        .await
        .expect("purge");
    assert_eq!(purged, 2);
    let left: Vec<_> = rows(&store, BoxKind::OutboxEvents)
        .await
        .into_iter()
        .map(|r| (r.message.record.id, r.message.status))
        .collect();
    assert_eq!(
        left,
        vec![
            (records[2].id, MessageStatus::Failed),
            (records[3].id, MessageStatus::Pending)
        ]
    );
}

/// With `retention` set, the runtime's task purges COMPLETED rows by itself.
pub async fn retention_task_purges_completed_rows_in_the_runtime<S: Inspect>(store: S) {
    let counter = Counter::default();
    let mut config = fast_config();
    config.events_outbox.retention = Some(Duration::from_millis(300));
    config.events_inbox.retention = Some(Duration::from_millis(300));
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("s", counter.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    bandeja
        .emit(&Event::new("Ping", "k", Ping { n: 1 }))
        .await
        .expect("emit");
    eventually(WAIT, || async { (counter.seen().len() == 1).then_some(()) })
        .await
        .expect("handled");
    super::runtime::wait_rows(&store, BoxKind::InboxEvents, |rows| rows.is_empty()).await;
    super::runtime::wait_rows(&store, BoxKind::OutboxEvents, |rows| rows.is_empty()).await;
    running.shutdown().await;
    assert_eq!(counter.seen(), vec![1]);
}

/// Stale PENDING and PROCESSING rows become FAILED with the reason; younger rows, and
/// rows in other statuses, are left alone. The PROCESSING row's lease has run out (its
/// worker died): a row under a live lease is never stale (see `conformance::staleness`).
pub async fn staleness_marks_pending_and_processing_rows_failed_with_the_reason<S: Inspect>(
    store: S,
) {
    let records: Vec<_> = (0..2).map(|n| ping(n, &format!("k{n}"))).collect();
    emit(&store, &records).await;
    let mut expired = request("w", 1);
    expired.lease = Duration::ZERO;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &expired)
        .await
        .expect("claim");
    assert_eq!(claimed[0].record.id, records[0].id);
    let young = StaleRequest {
        pending: Duration::from_secs(3_600),
        processing: Duration::from_secs(3_600),
        pending_reason: "too long pending",
        processing_reason: "too long processing",
    };
    let report = store
        .fail_stale(BoxKind::OutboxEvents, &young)
        .await
        .expect("stale");
    assert_eq!((report.pending, report.processing), (0, 0));
    let now = StaleRequest {
        pending: Duration::ZERO,
        processing: Duration::ZERO,
        ..young
    };
    let report = store
        .fail_stale(BoxKind::OutboxEvents, &now)
        .await
        .expect("stale");
    assert_eq!((report.pending, report.processing), (1, 1));
    let rows = rows(&store, BoxKind::OutboxEvents).await;
    let seen: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.message.status,
                r.message.last_error.as_deref(),
                r.locked_by.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (MessageStatus::Failed, Some("too long processing"), None),
            (MessageStatus::Failed, Some("too long pending"), None),
        ]
    );
    // The holder of the stale claim can no longer complete it.
    let late = store
        .resolve(
            BoxKind::OutboxEvents,
            "w",
            &[Outcome {
                id: records[0].id,
                subscriber: None,
                resolution: Resolution::Completed,
            }],
        )
        .await;
    assert!(late.is_ok());
    assert_eq!(
        super::rows(&store, BoxKind::OutboxEvents).await[0]
            .message
            .status,
        MessageStatus::Failed
    );
    let again = store
        .fail_stale(BoxKind::OutboxEvents, &now)
        .await
        .expect("stale");
    assert_eq!(
        (again.pending, again.processing),
        (0, 0),
        "FAILED rows stay"
    );
}

/// With `staleness.enabled`, a PENDING row nobody claims is marked FAILED by the monitor,
/// with a reason naming `staleness.pending`.
pub async fn staleness_monitor_runs_in_the_runtime<S: Inspect>(store: S) {
    let mut config = fast_config();
    config.events_outbox.enabled = Enabled::Off; // nobody dispatches: the row stays PENDING
    config.staleness.enabled = true;
    config.staleness.pending = Duration::from_millis(200);
    config.staleness.processing = Duration::from_secs(60);
    config.staleness.interval = Duration::from_millis(50);
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    bandeja
        .emit(&Event::new("Ping", "k", Ping { n: 1 }))
        .await
        .expect("emit");
    let rows = super::runtime::wait_rows(&store, BoxKind::OutboxEvents, |rows| {
        rows.len() == 1 && rows[0].message.status == MessageStatus::Failed
    })
    .await;
    running.shutdown().await;
    let reason = rows[0].message.last_error.clone().unwrap_or_default();
    assert!(reason.contains("staleness.pending (PT0.2S)"), "{reason}");
    assert!(reason.contains("`outbox_events`"), "{reason}");
}
