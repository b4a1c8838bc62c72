//! The staleness conformance suite: the monitor fails only rows of a box that makes no
//! progress, never a row that is only waiting (in a backlog that drains, behind an older
//! live row of its key, or held under a live lease), with
//! [`staleness_conformance_tests!`](crate::staleness_conformance_tests).
//!
//! Staleness is about time, so these tests let time pass on purpose (`tokio::time::sleep`
//! past a threshold of a few hundred milliseconds); they never sleep to wait for work.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::runtime::fast_config;
use super::{emit, ping, request, rows, Ping};
use crate::config::{CompletionMode, CompletionModes, Enabled, HandlerTransaction};
use crate::envelope::{Event, MessageId};
use crate::error::HandlerError;
use crate::processing::{EventHandler, HandlerContext};
use crate::record::{BoxKind, MessageKind, StoredMessage};
use crate::runtime::Bandeja;
use crate::status::MessageStatus;
use crate::store::{Delivery, Inspect, Outcome, Resolution, StaleRequest, Store};
use crate::testing::eventually;

/// Generates one `#[tokio::test]` per staleness check; `$make` as for
/// [`store_conformance_tests!`](crate::store_conformance_tests).
#[macro_export]
macro_rules! staleness_conformance_tests {
    ($make:path) => {
        $crate::store_conformance_tests!(@tests_in staleness $make;
            a_draining_backlog_is_not_failed_until_the_box_stops,
            a_row_behind_an_older_live_row_of_its_key_is_not_failed,
            processing_is_stale_only_when_its_lease_ran_out_long_ago,
            an_inbox_subscriber_that_stops_is_failed_while_another_drains,
            archived_rows_are_progress_in_archive_mode,
            a_stuck_box_is_failed_in_delete_mode,
            the_monitor_spares_a_slow_drain_in_the_runtime,
        );
    };
}

/// The threshold of the store-level checks.
const THRESHOLD: Duration = Duration::from_millis(500);

/// Lets more than [`THRESHOLD`] pass: time, not work, is what these checks wait for.
async fn past_the_threshold() {
    tokio::time::sleep(THRESHOLD + Duration::from_millis(200)).await;
}

fn stale_request() -> StaleRequest<'static> {
    StaleRequest {
        pending: THRESHOLD,
        processing: THRESHOLD,
        pending_reason: "stale pending",
        processing_reason: "stale processing",
    }
}

async fn fail_stale<S: Store>(store: &S, box_kind: BoxKind) -> (u64, u64) {
    let report = store
        .fail_stale(box_kind, &stale_request())
        .await
        .expect("fail stale");
    (report.pending, report.processing)
}

async fn claim_one<S: Store>(store: &S, box_kind: BoxKind, lease: Duration) -> StoredMessage {
    let mut request = request("w", 1);
    request.lease = lease;
    let mut claimed = store.claim(box_kind, &request).await.expect("claim");
    assert_eq!(claimed.len(), 1, "one row claimed");
    claimed.remove(0)
}

async fn resolve<S: Store>(store: &S, box_kind: BoxKind, message: &StoredMessage, r: Resolution) {
    let outcome = Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution: r,
    };
    store
        .resolve(box_kind, "w", &[outcome])
        .await
        .expect("resolve");
}

/// `(id, subscriber, status, last_error)` of every row of the box.
async fn statuses<S: Inspect>(
    store: &S,
    box_kind: BoxKind,
) -> Vec<(MessageId, Option<String>, MessageStatus, Option<String>)> {
    rows(store, box_kind)
        .await
        .into_iter()
        .map(|r| {
            (
                r.message.record.id,
                r.message.subscriber,
                r.message.status,
                r.message.last_error,
            )
        })
        .collect()
}

/// Rows due for longer than the threshold are spared while the box completes rows; once
/// it completed nothing for a whole threshold, they are FAILED with the reason.
pub async fn a_draining_backlog_is_not_failed_until_the_box_stops<S: Inspect>(store: S) {
    let records: Vec<_> = (0..3).map(|n| ping(n, &format!("k{n}"))).collect();
    emit(&store, &records).await;
    past_the_threshold().await;
    // The worker drains: one row completes now, the others wait their turn.
    let first = claim_one(&store, BoxKind::OutboxEvents, Duration::from_secs(30)).await;
    resolve(&store, BoxKind::OutboxEvents, &first, Resolution::Completed).await;
    assert_eq!(
        fail_stale(&store, BoxKind::OutboxEvents).await,
        (0, 0),
        "waiting in a backlog that drains is not stale"
    );
    // The box stops: nothing completes for a threshold.
    past_the_threshold().await;
    assert_eq!(fail_stale(&store, BoxKind::OutboxEvents).await, (2, 0));
    let failed = Some("stale pending".to_owned());
    assert_eq!(
        statuses(&store, BoxKind::OutboxEvents).await,
        vec![
            (records[0].id, None, MessageStatus::Completed, None),
            (records[1].id, None, MessageStatus::Failed, failed.clone()),
            (records[2].id, None, MessageStatus::Failed, failed),
        ]
    );
    assert_eq!(
        fail_stale(&store, BoxKind::OutboxEvents).await,
        (0, 0),
        "FAILED rows stay"
    );
}

/// A row due for long behind an older live row of its key (here one in a long retry
/// backoff) is only waiting: it is not failed, while a stuck head of another key is.
pub async fn a_row_behind_an_older_live_row_of_its_key_is_not_failed<S: Inspect>(store: S) {
    let records = vec![ping(0, "a"), ping(1, "a"), ping(2, "b")];
    emit(&store, &records).await;
    let head = claim_one(&store, BoxKind::OutboxEvents, Duration::from_secs(30)).await;
    assert_eq!(head.record.id, records[0].id);
    let backoff = Resolution::Retry {
        retry_count: 1,
        delay: Duration::from_secs(3_600),
        error: "broker down".into(),
    };
    resolve(&store, BoxKind::OutboxEvents, &head, backoff).await;
    past_the_threshold().await;
    assert_eq!(fail_stale(&store, BoxKind::OutboxEvents).await, (1, 0));
    let seen: Vec<_> = statuses(&store, BoxKind::OutboxEvents)
        .await
        .into_iter()
        .map(|(id, _, status, _)| (id, status))
        .collect();
    assert_eq!(
        seen,
        vec![
            (records[0].id, MessageStatus::Pending),
            (records[1].id, MessageStatus::Pending),
            (records[2].id, MessageStatus::Failed),
        ],
        "only the head of key b, due and nothing ahead of it, is stale"
    );
}

/// A PROCESSING row claimed long ago under a live lease (its holder renews it) is never
/// stale, and it keeps the box alive; one whose lease ran out longer than the threshold
/// ago, in a box where nothing else moves, is FAILED.
pub async fn processing_is_stale_only_when_its_lease_ran_out_long_ago<S: Inspect>(store: S) {
    let records = vec![ping(0, "a"), ping(1, "b")];
    emit(&store, &records).await;
    let held = claim_one(&store, BoxKind::OutboxEvents, Duration::from_secs(3_600)).await;
    let dead = claim_one(&store, BoxKind::OutboxEvents, Duration::ZERO).await;
    assert_eq!(
        (held.record.id, dead.record.id),
        (records[0].id, records[1].id)
    );
    past_the_threshold().await;
    assert_eq!(
        fail_stale(&store, BoxKind::OutboxEvents).await,
        (0, 0),
        "a live lease is never stale, and while one is held the box is alive"
    );
    // The live holder lets its row go (graceful shutdown): nothing moves any more.
    resolve(&store, BoxKind::OutboxEvents, &held, Resolution::Release).await;
    assert_eq!(fail_stale(&store, BoxKind::OutboxEvents).await, (0, 1));
    assert_eq!(
        statuses(&store, BoxKind::OutboxEvents).await,
        vec![
            (records[0].id, None, MessageStatus::Pending, None),
            (
                records[1].id,
                None,
                MessageStatus::Failed,
                Some("stale processing".to_owned())
            ),
        ]
    );
}

/// Inboxes are judged per subscriber: the rows of one that stopped are FAILED, the waiting
/// rows of one that drains are not.
pub async fn an_inbox_subscriber_that_stops_is_failed_while_another_drains<S: Inspect>(store: S) {
    let (first, second) = (ping(0, "a"), ping(1, "b"));
    let (drains, stopped) = (
        vec!["drains".to_owned()],
        vec!["drains".to_owned(), "stopped".to_owned()],
    );
    let deliveries = [
        Delivery {
            record: &first,
            subscribers: &drains,
        },
        Delivery {
            record: &second,
            subscribers: &stopped,
        },
    ];
    store
        .receive(MessageKind::Event, &deliveries)
        .await
        .expect("receive");
    past_the_threshold().await;
    let done = claim_one(&store, BoxKind::InboxEvents, Duration::from_secs(30)).await;
    assert_eq!(
        (done.record.id, done.subscriber.as_deref()),
        (first.id, Some("drains"))
    );
    resolve(&store, BoxKind::InboxEvents, &done, Resolution::Completed).await;
    assert_eq!(fail_stale(&store, BoxKind::InboxEvents).await, (1, 0));
    let mut seen: Vec<_> = statuses(&store, BoxKind::InboxEvents)
        .await
        .into_iter()
        .map(|(id, subscriber, status, _)| (id, subscriber, status))
        .collect();
    seen.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut expected = vec![
        (
            first.id,
            Some("drains".to_owned()),
            MessageStatus::Completed,
        ),
        (second.id, Some("drains".to_owned()), MessageStatus::Pending),
        (second.id, Some("stopped".to_owned()), MessageStatus::Failed),
    ];
    expected.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    assert_eq!(seen, expected);
}

/// In `archive` mode a completed row moves into the archive: its `archived_at` is the
/// box's progress (outbox and inbox); once nothing is archived for a threshold, the
/// waiting rows are FAILED.
pub async fn archived_rows_are_progress_in_archive_mode<S: Inspect>(store: S) {
    let modes = CompletionModes::default()
        .with(BoxKind::OutboxEvents, CompletionMode::Archive)
        .with(BoxKind::InboxEvents, CompletionMode::Archive);
    let store = store.with_completion(modes).expect("archive mode");
    emit(&store, &[ping(0, "a"), ping(1, "b")]).await;
    let (first, second) = (ping(2, "c"), ping(3, "d"));
    let subscribers = vec!["s".to_owned()];
    let deliveries: Vec<_> = [&first, &second]
        .into_iter()
        .map(|record| Delivery {
            record,
            subscribers: &subscribers,
        })
        .collect();
    store
        .receive(MessageKind::Event, &deliveries)
        .await
        .expect("receive");
    past_the_threshold().await;
    for box_kind in [BoxKind::OutboxEvents, BoxKind::InboxEvents] {
        let done = claim_one(&store, box_kind, Duration::from_secs(30)).await;
        resolve(&store, box_kind, &done, Resolution::Completed).await;
        assert_eq!(
            rows(&store, box_kind).await.len(),
            1,
            "{box_kind}: archived"
        );
        assert_eq!(fail_stale(&store, box_kind).await, (0, 0), "{box_kind}");
    }
    past_the_threshold().await;
    for box_kind in [BoxKind::OutboxEvents, BoxKind::InboxEvents] {
        assert_eq!(fail_stale(&store, box_kind).await, (1, 0), "{box_kind}");
    }
}

/// In `delete` mode a box where nothing moves is failed as in the other modes.
pub async fn a_stuck_box_is_failed_in_delete_mode<S: Inspect>(store: S) {
    let modes = CompletionModes::default().with(BoxKind::OutboxEvents, CompletionMode::Delete);
    let store = store.with_completion(modes).expect("delete mode");
    let records = vec![ping(0, "a"), ping(1, "b")];
    emit(&store, &records).await;
    let held = claim_one(&store, BoxKind::OutboxEvents, Duration::from_secs(3_600)).await;
    past_the_threshold().await;
    assert_eq!(
        fail_stale(&store, BoxKind::OutboxEvents).await,
        (0, 0),
        "a live lease keeps the box alive"
    );
    resolve(&store, BoxKind::OutboxEvents, &held, Resolution::Completed).await;
    past_the_threshold().await;
    assert_eq!(fail_stale(&store, BoxKind::OutboxEvents).await, (1, 0));
    assert_eq!(
        statuses(&store, BoxKind::OutboxEvents).await,
        vec![(
            records[1].id,
            None,
            MessageStatus::Failed,
            Some("stale pending".to_owned())
        )]
    );
}

/// Takes a while per message: a backlog that drains slower than the threshold.
#[derive(Clone, Default)]
struct Slow(Arc<Mutex<Vec<u64>>>);

impl Slow {
    fn seen(&self) -> usize {
        self.0.lock().map(|s| s.len()).unwrap_or_default()
    }
}

impl<S: Store> EventHandler<S, Ping> for Slow {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        tokio::time::sleep(Duration::from_millis(100)).await; // the handler's work
        if let Ok(mut seen) = self.0.lock() {
            seen.push(event.payload.n);
        }
        Ok(())
    }
}

/// The monitor running every 50 ms with a 1 s threshold never fails a message of a
/// backlog that takes more than twice as long to drain one message at a time: every row
/// ends COMPLETED (the rule it replaces failed the rows waiting longer than 1 s).
pub async fn the_monitor_spares_a_slow_drain_in_the_runtime<S: Inspect>(store: S) {
    let mut config = fast_config();
    config.staleness.enabled = true;
    config.staleness.pending = Duration::from_secs(1);
    config.staleness.processing = Duration::from_secs(60);
    config.staleness.interval = Duration::from_millis(50);
    config.events_inbox.batch_size = 1;
    config.events_inbox.handler_transaction = HandlerTransaction::Message;
    config.events_inbox.enabled = Enabled::On;
    let slow = Slow::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .handler_concurrency(1)
        .on_event::<Ping, _>("slow", slow.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let total = 24;
    for n in 0..total {
        bandeja
            .emit(&Event::new("Ping", format!("k{n}"), Ping { n }))
            .await
            .expect("emit");
    }
    let settled = eventually(Duration::from_secs(30), || async {
        let rows = store.rows(BoxKind::InboxEvents).await.ok()?;
        let live = rows.iter().any(|r| {
            matches!(
                r.message.status,
                MessageStatus::Pending | MessageStatus::Processing
            )
        });
        (rows.len() == usize::try_from(total).unwrap_or(0) && !live).then_some(rows)
    })
    .await
    .expect("the backlog drained");
    running.shutdown().await;
    let failed: Vec<_> = settled
        .iter()
        .filter(|r| r.message.status != MessageStatus::Completed)
        .map(|r| r.message.last_error.clone())
        .collect();
    assert!(failed.is_empty(), "rows failed while waiting: {failed:?}");
    assert_eq!(slow.seen(), 24);
}
