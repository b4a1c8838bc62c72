//! The `Admin` conformance suite: every store runs these checks of counters, listings,
//! count, show, retry, replay, outbox replay (in [`outbox_replay`]), purge and archive (and,
//! in [`subscribers`], of the subscriptions: listing, retirement, the health verdict) with
//! [`admin_conformance_tests!`](crate::admin_conformance_tests).
//!
//! Most checks start from the same [`Fixture`]: rows in every status, two tenants, two
//! message types, an inbox message with two subscribers.

use std::future::Future;
use std::time::Duration;

use chrono::Utc;

use crate::store::{emit, ping, request, rows};

pub mod outbox_replay;

use bandeja_core::admin::{Admin, MessageFilter, MessageView, Page};
use bandeja_core::envelope::MessageId;
use bandeja_core::error::StoreErrorKind;
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord, StoredMessage};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Delivery, Inspect, Outcome, Resolution, RowView, Store};
use bandeja_core::tenant::TenantId;
pub use outbox_replay::{
    outbox_replay_backfills_a_new_subscriber, outbox_replay_chooses_by_time_window_id_and_tenant,
    outbox_replay_moves_archived_rows_back_into_the_box,
    outbox_replay_refuses_what_it_cannot_serve,
    outbox_replay_resends_completed_rows_and_the_inbox_absorbs_them,
    outbox_replay_runs_in_batches_and_takes_each_row_once,
};

mod rejected;
pub use rejected::retry_routes_a_rejected_message_once_a_subscription_exists;

mod subscribers;

pub use subscribers::{
    a_process_not_refreshed_within_live_for_is_not_live,
    health_turns_down_naming_an_unattended_subscription,
    retire_discard_removes_the_subscription_and_its_rows,
    retire_is_refused_while_a_live_process_runs_it, retire_keep_fails_the_rows_with_the_reason,
    subscriptions_list_live_processes_and_inbox_rows,
};

/// A row read back from an archive table by the store's test crate: id, subscriber, status.
pub type ArchivedRow = (MessageId, Option<String>, MessageStatus);

/// Generates one `#[tokio::test]` per `Admin` check. `$make` as for
/// [`store_conformance_tests!`](crate::store_conformance_tests); `$archived` is an
/// `async fn(S, BoxKind) -> Vec<ArchivedRow>` reading the box's archive table (each store's
/// test crate writes it in its own SQL: the `Admin` trait has no archive reader).
#[macro_export]
macro_rules! admin_conformance_tests {
    ($make:path, $archived:path) => {
        $crate::store_conformance_tests!(@tests_in admin $make;
            ping_answers,
            counters_count_each_status_per_box,
            counters_by_tenant_split_each_box,
            stuck_counts_pending_rows_older_than_the_threshold,
            stuck_counts_from_the_last_change_so_a_retried_old_row_is_not_stuck,
            counters_count_live_and_failed_rows_taken_over,
            list_filters_by_every_field,
            list_pages_newest_first_without_overlap,
            count_matches_what_list_returns_for_every_filter,
            show_returns_the_outbox_row_and_every_inbox_row,
            retry_resubmits_failed_rows_only_and_wakes_the_box,
            retry_and_replay_reject_filters_they_cannot_serve,
            replay_resubmits_completed_inbox_rows_only,
            outbox_replay_resends_completed_rows_and_the_inbox_absorbs_them,
            outbox_replay_backfills_a_new_subscriber,
            outbox_replay_moves_archived_rows_back_into_the_box,
            outbox_replay_refuses_what_it_cannot_serve,
            outbox_replay_chooses_by_time_window_id_and_tenant,
            outbox_replay_runs_in_batches_and_takes_each_row_once,
            purge_deletes_old_completed_rows_only,
            purge_and_archive_count_a_row_completed_just_before_the_horizon,
            sql_metacharacters_in_filters_match_nothing_and_break_nothing,
            retry_routes_a_rejected_message_once_a_subscription_exists,
        );

        $crate::store_conformance_tests!(@tests_in admin $make;
            subscriptions_list_live_processes_and_inbox_rows,
            a_process_not_refreshed_within_live_for_is_not_live,
            retire_is_refused_while_a_live_process_runs_it,
            retire_discard_removes_the_subscription_and_its_rows,
            retire_keep_fails_the_rows_with_the_reason,
            health_turns_down_naming_an_unattended_subscription,
        );

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn archive_moves_old_completed_rows_out_of_the_box() {
            let (store, _guard) = $make().await;
            $crate::admin::archive_moves_old_completed_rows_out_of_the_box(
                store, $archived,
            )
            .await;
        }
    };
}

const ACME: &str = "acme";
const GLOBEX: &str = "globex";
const PONG: &str = "conformance.Pong";

/// The rows every check starts from. Outbox events: tenant `acme` has one row in each
/// status, tenant `globex` one FAILED and one PENDING (of type `conformance.Pong`).
/// Inbox events: `received` for subscribers `inventory` (COMPLETED) and `notification`
/// (FAILED), tenant `acme`.
pub struct Fixture {
    /// acme, PENDING.
    pub a_pending: MessageRecord,
    /// acme, PROCESSING (held by worker `w`).
    pub a_processing: MessageRecord,
    /// acme, FAILED with `boom`, retry count 3.
    pub a_failed: MessageRecord,
    /// acme, COMPLETED.
    pub a_done: MessageRecord,
    /// globex, FAILED with `no route`.
    pub g_failed: MessageRecord,
    /// globex, PENDING, type `conformance.Pong`.
    pub g_pending: MessageRecord,
    /// In the events inbox for `inventory` (COMPLETED) and `notification` (FAILED).
    pub received: MessageRecord,
}

fn record(n: u64, tenant: &str) -> MessageRecord {
    let mut record = ping(n, &format!("k{n}"));
    record.tenant_id = TenantId::new(tenant).expect("valid tenant");
    record
}

fn outcome(id: MessageId, subscriber: Option<&str>, resolution: Resolution) -> Outcome {
    Outcome {
        id,
        subscriber: subscriber.map(str::to_owned),
        resolution,
    }
}

fn failed(error: &str, retry_count: u32) -> Resolution {
    Resolution::Failed {
        retry_count,
        error: error.into(),
    }
}

async fn claim_all<S: Store>(store: &S, box_kind: BoxKind) -> usize {
    let unordered = bandeja_core::store::ClaimRequest {
        ordered: false,
        ..request("w", 100)
    };
    store
        .claim(box_kind, &unordered)
        .await
        .expect("claim")
        .len()
}

/// Writes the [`Fixture`] rows.
pub async fn fixture<S: Store>(store: &S) -> Fixture {
    let (a_processing, a_failed, a_done) = (record(1, ACME), record(2, ACME), record(3, ACME));
    emit(
        store,
        &[a_processing.clone(), a_failed.clone(), a_done.clone()],
    )
    .await;
    let g_failed = record(4, GLOBEX);
    emit(store, std::slice::from_ref(&g_failed)).await;
    assert_eq!(claim_all(store, BoxKind::OutboxEvents).await, 4);
    let outcomes = [
        outcome(a_failed.id, None, failed("boom", 3)),
        outcome(a_done.id, None, Resolution::Completed),
        outcome(g_failed.id, None, failed("no route", 0)),
    ];
    store
        .resolve(BoxKind::OutboxEvents, "w", &outcomes)
        .await
        .expect("resolve");
    let a_pending = record(5, ACME);
    let mut g_pending = record(6, GLOBEX);
    g_pending.message_type = PONG.into();
    emit(store, &[a_pending.clone(), g_pending.clone()]).await;

    let received = record(7, ACME);
    let subscribers = ["inventory".to_owned(), "notification".to_owned()];
    store
        .receive(
            MessageKind::Event,
            &[Delivery {
                record: &received,
                subscribers: &subscribers,
            }],
        )
        .await
        .expect("receive");
    assert_eq!(claim_all(store, BoxKind::InboxEvents).await, 2);
    let outcomes = [
        outcome(received.id, Some("inventory"), Resolution::Completed),
        outcome(
            received.id,
            Some("notification"),
            failed("handler error", 1),
        ),
    ];
    store
        .resolve(BoxKind::InboxEvents, "w", &outcomes)
        .await
        .expect("resolve");
    Fixture {
        a_pending,
        a_processing,
        a_failed,
        a_done,
        g_failed,
        g_pending,
        received,
    }
}

/// The row of `id` (and `subscriber`) in `box_kind`.
async fn row<S: Inspect>(
    store: &S,
    box_kind: BoxKind,
    id: MessageId,
    subscriber: Option<&str>,
) -> RowView {
    rows(store, box_kind)
        .await
        .into_iter()
        .find(|r| r.message.record.id == id && r.message.subscriber.as_deref() == subscriber)
        .expect("row exists")
}

/// Statuses by id and subscriber, to compare a box before and after an operation.
async fn snapshot<S: Inspect>(
    store: &S,
) -> Vec<(BoxKind, MessageId, Option<String>, MessageStatus)> {
    let mut all = Vec::new();
    for box_kind in BoxKind::ALL {
        for r in rows(store, box_kind).await {
            all.push((
                box_kind,
                r.message.record.id,
                r.message.subscriber.clone(),
                r.message.status,
            ));
        }
    }
    all
}

async fn list<S: Admin>(store: &S, filter: MessageFilter) -> Vec<MessageView> {
    store.list(&filter, Page::default()).await.expect("list")
}

fn ids(views: &[MessageView]) -> Vec<MessageId> {
    views.iter().map(|v| v.message.record.id).collect()
}

const HOUR: Duration = Duration::from_secs(3600);

/// `ping` succeeds on a reachable database.
pub async fn ping_answers<S: Admin>(store: S) {
    store.ping().await.expect("ping");
}

/// One entry per box with the fixture's counts; empty boxes count zero.
pub async fn counters_count_each_status_per_box<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let counters = store.counters(HOUR, false).await.expect("counters");
    assert_eq!(
        counters.iter().map(|c| c.box_kind).collect::<Vec<_>>(),
        BoxKind::ALL.to_vec()
    );
    let outbox = &counters[0];
    assert_eq!(outbox.tenant, None);
    assert_eq!(
        (
            outbox.pending,
            outbox.processing,
            outbox.failed,
            outbox.stuck
        ),
        (2, 1, 2, 0)
    );
    let a_pending = outbox_view(&store, f.a_pending.id).await;
    assert_eq!(outbox.oldest_pending_at, Some(a_pending.last_modified_at));
    let a_done = row(&store, BoxKind::OutboxEvents, f.a_done.id, None).await;
    assert_eq!(outbox.last_processed_at, a_done.completed_at);
    assert!(a_done.completed_at.is_some());
    let inbox = &counters[1];
    assert_eq!((inbox.pending, inbox.processing, inbox.failed), (0, 0, 1));
    let inventory = row(
        &store,
        BoxKind::InboxEvents,
        f.received.id,
        Some("inventory"),
    )
    .await;
    assert_eq!(inbox.last_processed_at, inventory.completed_at);
    assert_eq!(inbox.oldest_pending_at, None);
    for empty in &counters[2..] {
        assert_eq!(
            (empty.pending, empty.processing, empty.failed, empty.stuck),
            (0, 0, 0, 0)
        );
        assert_eq!(
            (empty.oldest_pending_at, empty.last_processed_at),
            (None, None)
        );
    }
}

/// `by_tenant`: one entry per box and tenant with live or FAILED rows, each with its own counts.
pub async fn counters_by_tenant_split_each_box<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let counters = store.counters(HOUR, true).await.expect("counters");
    let keys: Vec<_> = counters
        .iter()
        .map(|c| (c.box_kind, c.tenant.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        keys,
        vec![
            (BoxKind::OutboxEvents, ACME.to_owned()),
            (BoxKind::OutboxEvents, GLOBEX.to_owned()),
            (BoxKind::InboxEvents, ACME.to_owned()),
        ]
    );
    let (acme, globex, inbox) = (&counters[0], &counters[1], &counters[2]);
    assert_eq!((acme.pending, acme.processing, acme.failed), (1, 1, 1));
    assert_eq!(
        (globex.pending, globex.processing, globex.failed),
        (1, 0, 1)
    );
    assert_eq!((inbox.pending, inbox.processing, inbox.failed), (0, 0, 1));
    let a_done = row(&store, BoxKind::OutboxEvents, f.a_done.id, None).await;
    assert_eq!(acme.last_processed_at, a_done.completed_at);
    assert_eq!(globex.last_processed_at, None, "globex completed nothing");
    let g_pending = outbox_view(&store, f.g_pending.id).await;
    assert_eq!(globex.oldest_pending_at, Some(g_pending.last_modified_at));
    assert!(inbox.last_processed_at.is_some());
}

/// The events outbox row of message `id`, as an operator sees it.
async fn outbox_view<S: Admin>(store: &S, id: MessageId) -> MessageView {
    store
        .show(id)
        .await
        .expect("show")
        .into_iter()
        .find(|v| v.message.box_kind == BoxKind::OutboxEvents)
        .expect("the outbox row")
}

/// A PENDING row is stuck once it is older than the threshold; other statuses never are.
pub async fn stuck_counts_pending_rows_older_than_the_threshold<S: Admin>(store: S) {
    fixture(&store).await;
    let counters = store.counters(HOUR, false).await.expect("counters");
    assert_eq!(counters[0].stuck, 0);
    let stuck = bandeja_core::testing::eventually(Duration::from_secs(10), || async {
        let c = store
            .counters(Duration::ZERO, false)
            .await
            .expect("counters");
        (c[0].stuck == 2).then_some(c)
    })
    .await
    .expect("both PENDING rows become stuck with a zero threshold");
    assert_eq!(
        stuck[1].stuck, 0,
        "FAILED and COMPLETED rows are never stuck"
    );
    let per_tenant = store
        .counters(Duration::ZERO, true)
        .await
        .expect("counters");
    assert!(per_tenant
        .iter()
        .filter(|c| c.box_kind == BoxKind::OutboxEvents)
        .all(|c| c.stuck == 1));
}

/// Stuck counts from a row's last change (`last_modified_at`, seed 000's
/// `lastModifiedDate`), not from its creation. An acme row FAILED, then a globex row left
/// PENDING and untouched beyond the threshold: that one is stuck. Then an operator retries
/// the older FAILED row: it is PENDING again but not stuck, and `oldest_pending_at` stays
/// the untouched row's last change, not the retried row's (older) creation. Left alone
/// beyond the threshold in turn, the retried row becomes stuck too.
pub async fn stuck_counts_from_the_last_change_so_a_retried_old_row_is_not_stuck<S: Admin>(
    store: S,
) {
    const THRESHOLD: Duration = Duration::from_secs(2);
    let old = record(11, ACME);
    emit(&store, std::slice::from_ref(&old)).await;
    assert_eq!(claim_all(&store, BoxKind::OutboxEvents).await, 1);
    let outcomes = [outcome(old.id, None, failed("boom", 3))];
    store
        .resolve(BoxKind::OutboxEvents, "w", &outcomes)
        .await
        .expect("resolve");
    // Distinct creation times on any clock (SQLite records milliseconds).
    tokio::time::sleep(Duration::from_millis(20)).await;
    let untouched = record(12, GLOBEX);
    emit(&store, std::slice::from_ref(&untouched)).await;

    let outbox_counters = |by_tenant| {
        let store = &store;
        async move {
            let all = store
                .counters(THRESHOLD, by_tenant)
                .await
                .expect("counters");
            all.into_iter()
                .filter(|c| c.box_kind == BoxKind::OutboxEvents)
                .collect::<Vec<_>>()
        }
    };
    bandeja_core::testing::eventually(Duration::from_secs(20), || async {
        let c = outbox_counters(false).await;
        (c[0].stuck == 1).then_some(())
    })
    .await
    .expect("the untouched PENDING row becomes stuck");

    let failed_before = outbox_view(&store, old.id).await;
    let waiting = outbox_view(&store, untouched.id).await;
    assert_eq!(failed_before.message.status, MessageStatus::Failed);
    assert!(failed_before.created_at < waiting.created_at);

    let retried_at = std::time::Instant::now();
    let one = MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        id: Some(old.id),
        ..Default::default()
    };
    assert_eq!(store.retry(&one).await.expect("retry"), 1);
    let total = outbox_counters(false).await;
    let per_tenant = outbox_counters(true).await;
    let in_time = retried_at.elapsed() < THRESHOLD;

    let retried = outbox_view(&store, old.id).await;
    assert_eq!(retried.message.status, MessageStatus::Pending);
    assert_eq!(retried.created_at, failed_before.created_at);
    assert!(retried.last_modified_at > waiting.last_modified_at);
    let total = &total[0];
    assert_eq!(total.pending, 2, "{total:?}");
    assert_eq!(
        total.oldest_pending_at,
        Some(waiting.last_modified_at),
        "the untouched row's last change, not the retried row's creation"
    );
    // The retried row can be stuck only THRESHOLD after its retry: counts read before
    // that (always, unless the machine stalled for seconds) are conclusive.
    if in_time {
        assert_eq!(total.stuck, 1, "the retried row is not stuck: {total:?}");
        let stuck: Vec<_> = per_tenant
            .iter()
            .map(|c| (c.tenant.clone().unwrap_or_default(), c.pending, c.stuck))
            .collect();
        assert_eq!(
            stuck,
            vec![(ACME.to_owned(), 1, 0), (GLOBEX.to_owned(), 1, 1)]
        );
    }

    bandeja_core::testing::eventually(Duration::from_secs(20), || async {
        let c = outbox_counters(false).await;
        (c[0].stuck == 2).then_some(())
    })
    .await
    .expect("the retried row, left alone beyond the threshold, becomes stuck too");
}

/// Claims `records` (already emitted into the events outbox) with a 1 ms lease as worker
/// `dead`, then claims them again as worker `alive` once that lease ran out: each row is
/// taken over once and held by `alive` (30 s lease). The events outbox must hold no other
/// due row. Returns the rows as `alive` claimed them.
pub async fn take_over<S: Store>(store: &S, records: &[MessageRecord]) -> Vec<StoredMessage> {
    let dead = bandeja_core::store::ClaimRequest {
        lease: Duration::from_millis(1),
        ordered: false,
        ..request("dead", records.len())
    };
    let claimed = store
        .claim(BoxKind::OutboxEvents, &dead)
        .await
        .expect("claim as the worker that dies");
    assert_eq!(claimed.len(), records.len(), "every row is claimed");
    let alive = bandeja_core::store::ClaimRequest {
        ordered: false,
        ..request("alive", records.len())
    };
    let taken = std::sync::Mutex::new(Vec::<StoredMessage>::new());
    bandeja_core::testing::eventually(Duration::from_secs(10), || async {
        let got = store
            .claim(BoxKind::OutboxEvents, &alive)
            .await
            .expect("claim as the worker that lives");
        let mut taken = taken.lock().expect("not poisoned");
        taken.extend(got);
        (taken.len() == records.len()).then_some(())
    })
    .await
    .expect("every expired lease is taken over");
    let taken = taken.into_inner().expect("not poisoned");
    for message in &taken {
        assert_eq!(message.takeovers, 1, "taken over once");
        assert_eq!(message.taken_over_from.as_deref(), Some("dead"));
        assert_eq!(message.retry_count, 0, "a takeover is not a failed attempt");
    }
    taken
}

/// `taken_over` counts PENDING, PROCESSING and FAILED rows whose lease was taken over at
/// least once, per box and per tenant; COMPLETED rows and rows never taken over do not
/// count. The listing and `show` carry each row's takeover count apart from its retry count.
pub async fn counters_count_live_and_failed_rows_taken_over<S: Admin>(store: S) {
    let (retried, held, failed_row, done) = (
        record(1, ACME),
        record(2, ACME),
        record(3, GLOBEX),
        record(4, ACME),
    );
    let all = [
        retried.clone(),
        held.clone(),
        failed_row.clone(),
        done.clone(),
    ];
    emit(&store, &all).await;
    take_over(&store, &all).await;
    let untouched = record(5, ACME);
    emit(&store, std::slice::from_ref(&untouched)).await;
    let outcomes = [
        outcome(
            retried.id,
            None,
            Resolution::Retry {
                retry_count: 1,
                delay: HOUR,
                error: "broker down".into(),
            },
        ),
        outcome(failed_row.id, None, failed("no route", 0)),
        outcome(done.id, None, Resolution::Completed),
    ];
    store
        .resolve(BoxKind::OutboxEvents, "alive", &outcomes)
        .await
        .expect("resolve");

    let counters = store.counters(HOUR, false).await.expect("counters");
    let outbox = &counters[0];
    assert_eq!(
        (outbox.pending, outbox.processing, outbox.failed),
        (2, 1, 1)
    );
    assert_eq!(
        outbox.taken_over, 3,
        "the retried, the held and the FAILED row; not the COMPLETED one"
    );
    assert!(counters[1..].iter().all(|c| c.taken_over == 0));
    let per_tenant = store.counters(HOUR, true).await.expect("counters");
    let taken: Vec<_> = per_tenant
        .iter()
        .map(|c| (c.tenant.clone().unwrap_or_default(), c.taken_over))
        .collect();
    assert_eq!(taken, vec![(ACME.to_owned(), 2), (GLOBEX.to_owned(), 1)]);

    let attempts = |views: &[MessageView]| {
        views
            .iter()
            .map(|v| {
                (
                    v.message.record.id,
                    v.message.takeovers,
                    v.message.retry_count,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        attempts(&store.show(retried.id).await.expect("show")),
        vec![(retried.id, 1, 1)],
        "one takeover, then one failed attempt: counted apart"
    );
    assert_eq!(
        attempts(&store.show(untouched.id).await.expect("show")),
        vec![(untouched.id, 0, 0)]
    );
    let listed = list(&store, MessageFilter::default()).await;
    assert_eq!(
        attempts(&listed),
        vec![
            (untouched.id, 0, 0),
            (done.id, 1, 0),
            (failed_row.id, 1, 0),
            (held.id, 1, 0),
            (retried.id, 1, 1),
        ]
    );

    // An operator retry gives the row its takeover budget back, as it does its retries.
    let one = MessageFilter {
        id: Some(failed_row.id),
        ..Default::default()
    };
    assert_eq!(store.retry(&one).await.expect("retry"), 1);
    let shown = store.show(failed_row.id).await.expect("show");
    assert_eq!(attempts(&shown), vec![(failed_row.id, 0, 0)]);
    assert_eq!(shown[0].message.status, MessageStatus::Pending);
    let counters = store.counters(HOUR, false).await.expect("counters");
    assert_eq!((counters[0].pending, counters[0].taken_over), (3, 2));
}

/// Each filter field narrows the listing; rows come newest first per box.
pub async fn list_filters_by_every_field<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let all = list(&store, MessageFilter::default()).await;
    assert_eq!(all.len(), 8, "6 outbox rows and 2 inbox rows");
    let outbox: Vec<_> = all
        .iter()
        .filter(|v| v.message.box_kind == BoxKind::OutboxEvents)
        .collect();
    assert!(outbox
        .windows(2)
        .all(|w| w[0].message.seq > w[1].message.seq));
    assert!(all
        .iter()
        .all(|v| v.resubmitted_count == 0 && v.resubmitted_at.is_none()));
    let inbox_row = all
        .iter()
        .find(|v| v.message.box_kind == BoxKind::InboxEvents)
        .expect("inbox row");
    assert!(inbox_row.received_at.is_some());
    assert!(outbox.iter().all(|v| v.received_at.is_none()));

    let by_box = list(
        &store,
        MessageFilter {
            box_kind: Some(BoxKind::InboxEvents),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&by_box), vec![f.received.id, f.received.id]);
    let failed = list(
        &store,
        MessageFilter {
            status: Some(MessageStatus::Failed),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(
        ids(&failed),
        vec![f.g_failed.id, f.a_failed.id, f.received.id]
    );
    assert_eq!(failed[0].message.last_error.as_deref(), Some("no route"));
    let globex = list(
        &store,
        MessageFilter {
            tenant: Some(GLOBEX.into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&globex), vec![f.g_pending.id, f.g_failed.id]);
    let pong = list(
        &store,
        MessageFilter {
            message_type: Some(PONG.into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&pong), vec![f.g_pending.id]);
    let inventory = list(
        &store,
        MessageFilter {
            subscriber: Some("inventory".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(inventory.len(), 1);
    assert_eq!(inventory[0].message.status, MessageStatus::Completed);
    let one = list(
        &store,
        MessageFilter {
            id: Some(f.a_failed.id),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&one), vec![f.a_failed.id]);

    let now = Utc::now();
    let hour = chrono::Duration::hours(1);
    let window = |since, until| MessageFilter {
        since,
        until,
        ..Default::default()
    };
    assert_eq!(list(&store, window(Some(now - hour), None)).await.len(), 8);
    assert_eq!(list(&store, window(Some(now + hour), None)).await.len(), 0);
    assert_eq!(list(&store, window(None, Some(now + hour))).await.len(), 8);
    assert_eq!(list(&store, window(None, Some(now - hour))).await.len(), 0);
    let combined = list(
        &store,
        MessageFilter {
            box_kind: Some(BoxKind::OutboxEvents),
            status: Some(MessageStatus::Pending),
            tenant: Some(ACME.into()),
            ..window(Some(now - hour), Some(now + hour))
        },
    )
    .await;
    assert_eq!(ids(&combined), vec![f.a_pending.id]);
}

/// `count` agrees with `list` for every filter field (`completed_before` included), over
/// one box or all four, and counts nothing for values that match nothing.
pub async fn count_matches_what_list_returns_for_every_filter<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let now = Utc::now();
    let hour = chrono::Duration::hours(1);
    let done = row(&store, BoxKind::OutboxEvents, f.a_done.id, None).await;
    let done_at = done.completed_at.expect("completed_at");
    let created = done.created_at;
    let ns = chrono::Duration::nanoseconds(1);
    // `since` / `until` compare the recorded `created_at`, whatever its precision.
    let created_window = |since, until| MessageFilter {
        id: Some(f.a_done.id),
        since,
        until,
        ..Default::default()
    };
    let filters = [
        (created_window(Some(created), None), 1),
        (created_window(Some(created + ns), None), 0),
        (created_window(None, Some(created)), 0),
        (created_window(None, Some(created + ns)), 1),
        (MessageFilter::default(), 8),
        (
            MessageFilter {
                box_kind: Some(BoxKind::InboxEvents),
                ..Default::default()
            },
            2,
        ),
        (
            MessageFilter {
                status: Some(MessageStatus::Failed),
                ..Default::default()
            },
            3,
        ),
        (
            MessageFilter {
                box_kind: Some(BoxKind::OutboxEvents),
                status: Some(MessageStatus::Pending),
                ..Default::default()
            },
            2,
        ),
        (
            MessageFilter {
                tenant: Some(GLOBEX.into()),
                ..Default::default()
            },
            2,
        ),
        (
            MessageFilter {
                message_type: Some(PONG.into()),
                ..Default::default()
            },
            1,
        ),
        (
            MessageFilter {
                subscriber: Some("inventory".into()),
                ..Default::default()
            },
            1,
        ),
        (
            MessageFilter {
                id: Some(f.received.id),
                ..Default::default()
            },
            2,
        ),
        (
            MessageFilter {
                since: Some(now + hour),
                ..Default::default()
            },
            0,
        ),
        (
            MessageFilter {
                since: Some(now - hour),
                until: Some(now + hour),
                ..Default::default()
            },
            8,
        ),
        (
            MessageFilter {
                completed_before: Some(now + hour),
                ..Default::default()
            },
            2,
        ),
        (
            MessageFilter {
                box_kind: Some(BoxKind::OutboxEvents),
                status: Some(MessageStatus::Completed),
                completed_before: Some(done_at),
                ..Default::default()
            },
            0,
        ),
        (
            MessageFilter {
                box_kind: Some(BoxKind::OutboxEvents),
                status: Some(MessageStatus::Completed),
                completed_before: Some(done_at + ns),
                ..Default::default()
            },
            1,
        ),
        (
            MessageFilter {
                tenant: Some("' OR 1=1 --".into()),
                ..Default::default()
            },
            0,
        ),
    ];
    for (filter, expected) in &filters {
        let counted = store.count(filter).await.expect("count");
        assert_eq!(counted, *expected, "count {filter:?}");
        let listed = store.list(filter, Page::default()).await.expect("list");
        assert_eq!(listed.len() as u64, counted, "list and count {filter:?}");
    }
    let outbox_and_subscriber = MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        subscriber: Some("inventory".into()),
        ..Default::default()
    };
    assert_eq!(store.count(&outbox_and_subscriber).await.expect("count"), 0);
}

/// Pages follow `before_seq` without overlap or gaps; a zero limit lists nothing.
pub async fn list_pages_newest_first_without_overlap<S: Admin>(store: S) {
    let records: Vec<_> = (0..7).map(|n| record(n, ACME)).collect();
    emit(&store, &records).await;
    let filter = MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        ..Default::default()
    };
    let mut seen = Vec::new();
    let mut page = Page {
        limit: 3,
        before_seq: None,
    };
    let mut sizes = Vec::new();
    loop {
        let got = store.list(&filter, page).await.expect("list");
        sizes.push(got.len());
        let Some(last) = got.last() else { break };
        page.before_seq = Some(last.message.seq);
        seen.extend(ids(&got));
    }
    assert_eq!(sizes, vec![3, 3, 1, 0]);
    let newest_first: Vec<_> = records.iter().rev().map(|r| r.id).collect();
    assert_eq!(seen, newest_first);
    let none = store
        .list(
            &filter,
            Page {
                limit: 0,
                before_seq: None,
            },
        )
        .await
        .expect("list");
    assert!(none.is_empty());
}

/// `show` finds a message's outbox row and its inbox rows, with payload and bookkeeping.
pub async fn show_returns_the_outbox_row_and_every_inbox_row<S: Admin>(store: S) {
    let message = record(1, ACME);
    emit(&store, std::slice::from_ref(&message)).await;
    assert_eq!(claim_all(&store, BoxKind::OutboxEvents).await, 1);
    let subscribers = ["notification".to_owned(), "inventory".to_owned()];
    store
        .transfer(
            MessageKind::Event,
            "w",
            &[Delivery {
                record: &message,
                subscribers: &subscribers,
            }],
            &[outcome(message.id, None, Resolution::Completed)],
        )
        .await
        .expect("transfer");
    let shown = store.show(message.id).await.expect("show");
    let places: Vec<_> = shown
        .iter()
        .map(|v| {
            (
                v.message.box_kind,
                v.message.subscriber.clone(),
                v.message.status,
            )
        })
        .collect();
    assert_eq!(
        places,
        vec![
            (BoxKind::OutboxEvents, None, MessageStatus::Completed),
            (
                BoxKind::InboxEvents,
                Some("inventory".into()),
                MessageStatus::Pending
            ),
            (
                BoxKind::InboxEvents,
                Some("notification".into()),
                MessageStatus::Pending
            ),
        ]
    );
    let as_json = |text: &str| serde_json::from_str::<serde_json::Value>(text).expect("json");
    assert!(shown
        .iter()
        .all(|v| as_json(&v.message.record.payload) == as_json(&message.payload)));
    assert!(shown[0].completed_at.is_some());
    assert!(shown.iter().all(|v| v.last_modified_at >= v.created_at));
    assert!(store.show(MessageId::new()).await.expect("show").is_empty());
}

/// Retry: FAILED → PENDING due now, retry count 0, no lease, resubmission recorded, the
/// box's worker woken; rows in other statuses untouched.
pub async fn retry_resubmits_failed_rows_only_and_wakes_the_box<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let before = snapshot(&store).await;
    let woken = store.wakers().subscribe(BoxKind::OutboxEvents);
    let globex = MessageFilter {
        tenant: Some(GLOBEX.into()),
        ..Default::default()
    };
    assert_eq!(store.retry(&globex).await.expect("retry"), 1);
    assert!(
        woken.has_changed().expect("waker alive"),
        "the box was woken"
    );
    let shown = store.show(f.g_failed.id).await.expect("show");
    let retried = &shown[0];
    assert_eq!(retried.message.status, MessageStatus::Pending);
    assert_eq!(retried.message.retry_count, 0);
    assert_eq!(
        retried.message.last_error.as_deref(),
        Some("no route"),
        "kept"
    );
    assert_eq!(
        (retried.locked_by.as_deref(), retried.locked_until),
        (None, None)
    );
    assert!(retried.next_attempt_at.is_some_and(|t| t <= Utc::now()));
    assert_eq!(retried.resubmitted_count, 1);
    assert!(retried.resubmitted_at.is_some());
    let after = snapshot(&store).await;
    let changed: Vec<_> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b != a)
        .map(|(_, a)| a.clone())
        .collect();
    assert_eq!(
        changed,
        vec![(
            BoxKind::OutboxEvents,
            f.g_failed.id,
            None,
            MessageStatus::Pending
        )]
    );
    let processing = row(&store, BoxKind::OutboxEvents, f.a_processing.id, None).await;
    assert_eq!(
        processing.locked_by.as_deref(),
        Some("w"),
        "a held row is left alone"
    );

    assert_eq!(
        store.retry(&MessageFilter::default()).await.expect("retry"),
        2
    );
    let counters = store.counters(HOUR, false).await.expect("counters");
    assert!(counters.iter().all(|c| c.failed == 0));
    assert_eq!(counters[0].processing, 1);
    let done = row(&store, BoxKind::OutboxEvents, f.a_done.id, None).await;
    assert_eq!(done.message.status, MessageStatus::Completed);
    let notification = store.show(f.received.id).await.expect("show");
    assert_eq!(
        notification[1].message.subscriber.as_deref(),
        Some("notification")
    );
    assert_eq!(notification[1].message.status, MessageStatus::Pending);
    assert_eq!(notification[0].message.status, MessageStatus::Completed);
    assert_eq!(
        store.retry(&MessageFilter::default()).await.expect("retry"),
        0
    );

    let claimed = store
        .claim(
            BoxKind::OutboxEvents,
            &bandeja_core::store::ClaimRequest {
                ordered: false,
                ..request("w2", 100)
            },
        )
        .await
        .expect("claim");
    assert!(
        claimed.iter().any(|m| m.record.id == f.g_failed.id),
        "a worker takes the resubmitted row at once"
    );
}

/// Retry refuses a filter for another status; replay one for another status or an outbox.
pub async fn retry_and_replay_reject_filters_they_cannot_serve<S: Admin>(store: S) {
    fixture(&store).await;
    let before = snapshot(&store).await;
    let pending = MessageFilter {
        status: Some(MessageStatus::Pending),
        ..Default::default()
    };
    let err = store
        .retry(&pending)
        .await
        .expect_err("retry of PENDING rows");
    assert_eq!(err.kind, StoreErrorKind::Permanent, "{err}");
    let err = store
        .replay(&pending)
        .await
        .expect_err("replay of PENDING rows");
    assert_eq!(err.kind, StoreErrorKind::Permanent, "{err}");
    let outbox = MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        ..Default::default()
    };
    let err = store
        .replay(&outbox)
        .await
        .expect_err("replay of an outbox");
    assert!(err.to_string().contains("inboxes"), "{err}");
    assert_eq!(snapshot(&store).await, before, "nothing changed");
}

/// Replay: COMPLETED inbox rows → PENDING with the resubmission recorded; outbox rows and
/// rows in other statuses untouched.
pub async fn replay_resubmits_completed_inbox_rows_only<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let before = snapshot(&store).await;
    let woken = store.wakers().subscribe(BoxKind::InboxEvents);
    let inventory = MessageFilter {
        subscriber: Some("inventory".into()),
        ..Default::default()
    };
    assert_eq!(store.replay(&inventory).await.expect("replay"), 1);
    assert!(woken.has_changed().expect("waker alive"));
    let shown = store.show(f.received.id).await.expect("show");
    let replayed = &shown[0];
    assert_eq!(replayed.message.subscriber.as_deref(), Some("inventory"));
    assert_eq!(replayed.message.status, MessageStatus::Pending);
    assert_eq!(replayed.completed_at, None);
    assert_eq!(replayed.message.retry_count, 0);
    assert_eq!(replayed.resubmitted_count, 1);
    assert!(replayed.resubmitted_at.is_some());
    assert!(replayed.next_attempt_at.is_some_and(|t| t <= Utc::now()));
    let after = snapshot(&store).await;
    let changed = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    assert_eq!(changed, 1);
    assert_eq!(
        row(&store, BoxKind::OutboxEvents, f.a_done.id, None)
            .await
            .message
            .status,
        MessageStatus::Completed,
        "outbox rows are never replayed"
    );
    assert_eq!(
        store
            .replay(&MessageFilter::default())
            .await
            .expect("replay"),
        0
    );
    let since_tomorrow = MessageFilter {
        since: Some(Utc::now() + chrono::Duration::days(1)),
        ..Default::default()
    };
    assert_eq!(store.replay(&since_tomorrow).await.expect("replay"), 0);
}

/// Purge deletes COMPLETED rows completed before the cut-off, in as many batches as it takes.
pub async fn purge_deletes_old_completed_rows_only<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let past = Utc::now() - chrono::Duration::hours(1);
    let future = Utc::now() + chrono::Duration::hours(1);
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, past)
            .await
            .expect("purge"),
        0
    );
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, future)
            .await
            .expect("purge"),
        1
    );
    let left = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(left.len(), 5);
    assert!(left.iter().all(|r| r.message.record.id != f.a_done.id));
    assert_eq!(
        rows(&store, BoxKind::InboxEvents).await.len(),
        2,
        "other boxes untouched"
    );
    assert_eq!(
        store
            .purge(BoxKind::InboxEvents, future)
            .await
            .expect("purge"),
        1
    );

    let many: Vec<_> = (100..2600).map(|n| record(n, ACME)).collect();
    emit(&store, &many).await;
    let request = bandeja_core::store::ClaimRequest {
        ordered: false,
        ..request("w", 5000)
    };
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request)
        .await
        .expect("claim");
    let done: Vec<_> = claimed
        .iter()
        .filter(|m| m.record.id != f.a_processing.id && m.record.id != f.g_failed.id)
        .filter(|m| many.iter().any(|r| r.id == m.record.id))
        .map(|m| outcome(m.record.id, None, Resolution::Completed))
        .collect();
    assert_eq!(done.len(), 2500);
    store
        .resolve(BoxKind::OutboxEvents, "w", &done)
        .await
        .expect("resolve");
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, future)
            .await
            .expect("purge"),
        2500
    );
    assert_eq!(rows(&store, BoxKind::OutboxEvents).await.len(), 5);
}

/// The horizon is compared with `completed_at` as the store records it: a row recorded as
/// completed at `c` survives a horizon of `c` and goes with any later horizon, even one in
/// the same millisecond (`older_than = 0s` right after a completion must take that row).
pub async fn purge_and_archive_count_a_row_completed_just_before_the_horizon<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let done = row(&store, BoxKind::OutboxEvents, f.a_done.id, None).await;
    let completed_at = done.completed_at.expect("a COMPLETED row has completed_at");
    let just_after = completed_at + chrono::Duration::nanoseconds(1);
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, completed_at)
            .await
            .expect("purge"),
        0,
        "completed at the horizon is not before it"
    );
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, just_after)
            .await
            .expect("purge"),
        1,
        "completed 1ns before the horizon"
    );
    let inbox = row(
        &store,
        BoxKind::InboxEvents,
        f.received.id,
        Some("inventory"),
    )
    .await;
    let completed_at = inbox
        .completed_at
        .expect("a COMPLETED row has completed_at");
    assert_eq!(
        store
            .archive(BoxKind::InboxEvents, completed_at)
            .await
            .expect("archive"),
        0
    );
    assert_eq!(
        store
            .archive(
                BoxKind::InboxEvents,
                completed_at + chrono::Duration::nanoseconds(1)
            )
            .await
            .expect("archive"),
        1
    );
}

/// Archive moves COMPLETED rows completed before the cut-off into `<box>_archive`; an id
/// archived twice (received again after its row was archived) is kept twice.
pub async fn archive_moves_old_completed_rows_out_of_the_box<S, F, Fut>(store: S, archived: F)
where
    S: Admin,
    F: Fn(S, BoxKind) -> Fut,
    Fut: Future<Output = Vec<ArchivedRow>>,
{
    let f = fixture(&store).await;
    let past = Utc::now() - chrono::Duration::hours(1);
    let future = Utc::now() + chrono::Duration::hours(1);
    assert_eq!(
        store
            .archive(BoxKind::OutboxEvents, past)
            .await
            .expect("archive"),
        0
    );
    assert!(archived(store.clone(), BoxKind::OutboxEvents)
        .await
        .is_empty());
    assert_eq!(
        store
            .archive(BoxKind::OutboxEvents, future)
            .await
            .expect("archive"),
        1
    );
    let left = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(left.len(), 5);
    assert!(left
        .iter()
        .all(|r| r.message.status != MessageStatus::Completed));
    assert_eq!(
        archived(store.clone(), BoxKind::OutboxEvents).await,
        vec![(f.a_done.id, None, MessageStatus::Completed)]
    );

    assert_eq!(
        store
            .archive(BoxKind::InboxEvents, future)
            .await
            .expect("archive"),
        1
    );
    let inventory = ["inventory".to_owned()];
    let again = store
        .receive(
            MessageKind::Event,
            &[Delivery {
                record: &f.received,
                subscribers: &inventory,
            }],
        )
        .await
        .expect("receive");
    assert_eq!(again.inserted, 1, "the archived row no longer deduplicates");
    assert_eq!(claim_all(&store, BoxKind::InboxEvents).await, 1);
    store
        .resolve(
            BoxKind::InboxEvents,
            "w",
            &[outcome(
                f.received.id,
                Some("inventory"),
                Resolution::Completed,
            )],
        )
        .await
        .expect("resolve");
    assert_eq!(
        store
            .archive(BoxKind::InboxEvents, future)
            .await
            .expect("archive"),
        1
    );
    let inbox_archive = archived(store.clone(), BoxKind::InboxEvents).await;
    let twice = (
        f.received.id,
        Some("inventory".to_owned()),
        MessageStatus::Completed,
    );
    assert_eq!(inbox_archive, vec![twice.clone(), twice]);
    let inbox = rows(&store, BoxKind::InboxEvents).await;
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].message.status, MessageStatus::Failed);
}

/// Filter values full of SQL metacharacters are plain values: they match nothing, change
/// nothing, and a tenant whose name holds a quote is found exactly.
pub async fn sql_metacharacters_in_filters_match_nothing_and_break_nothing<S: Admin>(store: S) {
    fixture(&store).await;
    let quoted = record(50, "o'brien");
    emit(&store, std::slice::from_ref(&quoted)).await;
    let before = snapshot(&store).await;
    let nasty = [
        "' OR 1=1 --",
        "x'; DROP TABLE outbox_events; --",
        "\" OR \"\"=\"",
        "%",
        "_",
        "\\",
    ];
    for value in nasty {
        let filters = [
            MessageFilter {
                tenant: Some(value.into()),
                ..Default::default()
            },
            MessageFilter {
                message_type: Some(value.into()),
                ..Default::default()
            },
            MessageFilter {
                subscriber: Some(value.into()),
                ..Default::default()
            },
        ];
        for filter in &filters {
            assert!(list(&store, filter.clone()).await.is_empty(), "{filter:?}");
            assert_eq!(store.retry(filter).await.expect("retry"), 0, "{filter:?}");
            assert_eq!(store.replay(filter).await.expect("replay"), 0, "{filter:?}");
        }
    }
    assert_eq!(
        snapshot(&store).await,
        before,
        "nothing changed, nothing dropped"
    );
    let found = list(
        &store,
        MessageFilter {
            tenant: Some("o'brien".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&found), vec![quoted.id]);
    let counters = store.counters(HOUR, false).await.expect("counters");
    assert_eq!(counters[0].pending, 3);
}
