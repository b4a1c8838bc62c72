//! The `Admin` conformance suite: every store runs these checks of counters, listings,
//! count, show, retry, replay, outbox replay (in [`outbox_replay`]), purge and archive,
//! discard and the archive's listing ([`discard`]), the attempts history ([`attempts`]),
//! the per-minute timeline ([`timeline`]), the correlation id filter ([`correlation`]) (and,
//! in [`subscribers`], of the subscriptions: listing, retirement, the health verdict) with
//! [`admin_conformance_tests!`](crate::admin_conformance_tests).
//!
//! Most checks start from the same [`Fixture`]: rows in every status, two tenants, two
//! message types, an inbox message with two subscribers. This module holds it and the
//! other helpers of the checks; the checks are in the topic modules below.

use std::time::Duration;

use bandeja_core::admin::{Admin, MessageFilter, MessageView, Page};
use bandeja_core::envelope::MessageId;
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{ClaimRequest, Delivery, Inspect, Outcome, Resolution, RowView, Store};
use bandeja_core::tenant::TenantId;

use crate::store::{emit, ping, request, rows};

pub mod attempts;
pub mod correlation;
pub mod counters;
pub mod cross_box;
pub mod discard;
pub mod filters;
pub mod listing;
pub mod outbox_replay;
pub mod purge;
pub mod rejected;
pub mod retry;
pub mod stuck;
pub mod subscribers;
pub mod timeline;

/// A row read back from an archive table by the store's test crate: id, subscriber, status.
pub type ArchivedRow = (MessageId, Option<String>, MessageStatus);

pub(crate) const ACME: &str = "acme";

pub(crate) const GLOBEX: &str = "globex";

pub(crate) const PONG: &str = "conformance.Pong";

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

pub(crate) fn record(n: u64, tenant: &str) -> MessageRecord {
    let mut record = ping(n, &format!("k{n}"));
    record.tenant_id = TenantId::new(tenant).expect("valid tenant");
    record
}

pub(crate) fn outcome(id: MessageId, subscriber: Option<&str>, resolution: Resolution) -> Outcome {
    Outcome {
        id,
        subscriber: subscriber.map(str::to_owned),
        resolution,
    }
}

pub(crate) fn failed(error: &str, retry_count: u32) -> Resolution {
    Resolution::Failed {
        retry_count,
        error: error.into(),
    }
}

/// An unordered claim of up to 100 rows by worker `w`.
pub(crate) fn unordered() -> ClaimRequest<'static> {
    ClaimRequest {
        ordered: false,
        ..request("w", 100)
    }
}

pub(crate) async fn claim_all<S: Store>(store: &S, box_kind: BoxKind) -> usize {
    store
        .claim(box_kind, &unordered())
        .await
        .expect("claim")
        .len()
}

/// Claims every due row of `box_kind` as worker `w` and writes `outcomes`, one for each
/// row claimed, as a worker does after its attempts.
pub(crate) async fn claim_and_resolve<S: Store>(
    store: &S,
    box_kind: BoxKind,
    outcomes: &[Outcome],
) {
    assert_eq!(
        claim_all(store, box_kind).await,
        outcomes.len(),
        "one outcome for each row claimed"
    );
    store
        .resolve(box_kind, "w", outcomes)
        .await
        .expect("resolve");
}

/// Writes the [`Fixture`] rows.
pub(crate) async fn fixture<S: Store>(store: &S) -> Fixture {
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
pub(crate) async fn row<S: Inspect>(
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
pub(crate) async fn snapshot<S: Inspect>(
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

pub(crate) async fn list<S: Admin>(store: &S, filter: MessageFilter) -> Vec<MessageView> {
    store.list(&filter, Page::default()).await.expect("list")
}

pub(crate) fn ids(views: &[MessageView]) -> Vec<MessageId> {
    views.iter().map(|v| v.message.record.id).collect()
}

pub(crate) const HOUR: Duration = Duration::from_secs(3600);

/// The events outbox row of message `id`, as an operator sees it.
pub(crate) async fn outbox_view<S: Admin>(store: &S, id: MessageId) -> MessageView {
    store
        .show(id)
        .await
        .expect("show")
        .into_iter()
        .find(|v| v.message.box_kind == BoxKind::OutboxEvents)
        .expect("the outbox row")
}
