//! The subscription checks of the `Admin` suite: the listing with live processes and
//! inbox rows, retirement (refused while live, discard, keep) and the verdict `/health`
//! draws from them. This module holds their helpers; the checks are in the topic modules
//! below.

use std::time::Duration;

use bandeja_core::admin::{Admin, SubscriptionView};
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{ClaimRequest, Store};
use bandeja_core::subscriptions::{Registration, Subscription};
use bandeja_core::testing::eventually;

use crate::fixtures::receive_events;
use crate::store::{ping, request, rows};

pub mod health;
pub mod listing;
pub mod retire;

/// How long a check waits for a condition.
pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// `live_for` for processes that must count as live throughout a check.
pub(crate) const LIVE: Duration = Duration::from_secs(600);

pub(crate) const PING: &str = "conformance.Ping";

pub(crate) const PONG: &str = "conformance.Pong";

pub(crate) fn subscription(
    kind: MessageKind,
    message_type: &str,
    subscriber: &str,
) -> Subscription {
    Subscription {
        kind,
        message_type: message_type.into(),
        subscriber: subscriber.into(),
        tenant: None,
    }
}

/// Registers process `process` (service `shop`) running `subscriptions`.
pub(crate) async fn register<S: Store>(store: &S, process: &str, subscriptions: &[Subscription]) {
    store
        .register(&Registration {
            process,
            service: "shop",
            host: "host-a",
            pid: 4242,
            subscriptions,
        })
        .await
        .expect("register");
}

/// `n` Ping events received into the events inbox for each of `subscribers`.
pub(crate) async fn received<S: Store>(
    store: &S,
    from: u64,
    n: u64,
    subscribers: &[&str],
) -> Vec<MessageRecord> {
    let records: Vec<MessageRecord> = (from..from + n)
        .map(|i| ping(i, &format!("sub-{i}")))
        .collect();
    let subscribers: Vec<String> = subscribers.iter().map(|s| (*s).to_owned()).collect();
    receive_events(store, records.iter(), &subscribers).await;
    records
}

/// Claims the due rows of `subscriber` in the events inbox as `worker` with `lease`.
pub(crate) async fn claim_of<S: Store>(
    store: &S,
    worker: &str,
    subscriber: &str,
    lease: Duration,
    limit: usize,
) -> usize {
    let only = [bandeja_core::subscriptions::Claimable {
        subscriber: subscriber.to_owned(),
        message_type: None,
        tenant: None,
    }];
    let claim = ClaimRequest {
        lease,
        ordered: false,
        subscribers: Some(&only),
        ..request(worker, limit)
    };
    store
        .claim(BoxKind::InboxEvents, &claim)
        .await
        .expect("claim")
        .len()
}

/// The statuses of `subscriber`'s rows in the events inbox, by id.
pub(crate) async fn statuses_of<S: Admin>(
    store: &S,
    subscriber: &str,
) -> Vec<(bandeja_core::MessageId, MessageStatus, Option<String>)> {
    let mut found: Vec<_> = rows(store, BoxKind::InboxEvents)
        .await
        .into_iter()
        .filter(|r| r.message.subscriber.as_deref() == Some(subscriber))
        .map(|r| (r.message.record.id, r.message.status, r.message.last_error))
        .collect();
    found.sort_by_key(|(id, _, _)| *id);
    found
}

pub(crate) fn find<'a>(
    views: &'a [SubscriptionView],
    kind: MessageKind,
    message_type: &str,
    subscriber: &str,
) -> &'a SubscriptionView {
    views
        .iter()
        .find(|v| v.kind == kind && v.message_type == message_type && v.subscriber == subscriber)
        .unwrap_or_else(|| panic!("no subscription {subscriber} / {message_type} in {views:#?}"))
}

/// `views` without their `unseen_for`, which grows between two readings.
pub(crate) fn settled(mut views: Vec<SubscriptionView>) -> Vec<SubscriptionView> {
    for view in &mut views {
        view.unseen_for = Duration::ZERO;
    }
    views
}

pub(crate) fn processes_of(view: &SubscriptionView) -> Vec<&str> {
    view.processes.iter().map(|p| p.process.as_str()).collect()
}

/// Has one PROCESSING row of `subscriber` (claimed with a 1 ms lease) whose lease ran out.
pub(crate) async fn expire_one_lease<S: Admin>(store: &S, subscriber: &str) {
    assert_eq!(
        claim_of(store, "dead", subscriber, Duration::from_millis(1), 1).await,
        1
    );
    eventually(WAIT, || async {
        let expired = rows(store, BoxKind::InboxEvents)
            .await
            .into_iter()
            .any(|r| {
                r.message.subscriber.as_deref() == Some(subscriber)
                    && r.message.status == MessageStatus::Processing
                    && r.locked_by.as_deref() == Some("dead")
                    && r.locked_until.is_some_and(|until| {
                        until + chrono::Duration::milliseconds(20) < chrono::Utc::now()
                    })
            });
        expired.then_some(())
    })
    .await
    .expect("the 1 ms lease runs out");
}
