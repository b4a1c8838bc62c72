//! The counters of the `Admin` suite: per status and box, per tenant, and the rows taken
//! over; `ping`.

use bandeja_core::admin::{Admin, MessageFilter, MessageView};
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Resolution;

use super::{failed, fixture, list, outbox_view, outcome, record, row, ACME, GLOBEX, HOUR};
use crate::fixtures::take_over;
use crate::store::emit;

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
