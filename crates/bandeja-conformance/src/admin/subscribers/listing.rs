//! The subscriptions listing: live processes and inbox rows per subscription, and a process
//! not refreshed within `live-for` is not live.

use std::time::Duration;

use bandeja_core::admin::{attendance, Admin, Attendance};
use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Outcome, Resolution};
use bandeja_core::testing::eventually;

use super::{
    claim_of, find, processes_of, received, register, subscription, LIVE, PING, PONG, WAIT,
};
use crate::store::rows;

/// Two processes with different subscriber sets: each subscription lists the live processes
/// that run its subscriber, with their host, pid and service, and its own pending
/// (PENDING + PROCESSING) and FAILED rows.
pub async fn subscriptions_list_live_processes_and_inbox_rows<S: Admin>(store: S) {
    let old = [
        subscription(MessageKind::Event, PING, "audit"),
        subscription(MessageKind::Command, PONG, "shipping"),
    ];
    let new = [
        subscription(MessageKind::Event, PING, "audit"),
        subscription(MessageKind::Event, PING, "billing"),
        subscription(MessageKind::Event, PONG, "billing"),
    ];
    register(&store, "old#0", &old).await;
    register(&store, "new#0", &new).await;
    received(&store, 0, 3, &["audit", "billing"]).await;
    // One billing row PROCESSING, one FAILED: pending counts both live statuses.
    assert_eq!(claim_of(&store, "w", "billing", LIVE, 2).await, 2);
    let held: Vec<_> = rows(&store, BoxKind::InboxEvents)
        .await
        .into_iter()
        .filter(|r| {
            r.message.subscriber.as_deref() == Some("billing")
                && r.message.status == MessageStatus::Processing
        })
        .collect();
    let fail = Outcome {
        id: held[0].message.record.id,
        subscriber: Some("billing".into()),
        resolution: Resolution::Failed {
            retry_count: 3,
            error: "boom".into(),
        },
    };
    store
        .resolve(BoxKind::InboxEvents, "w", &[fail])
        .await
        .expect("resolve");

    let views = store.subscriptions(LIVE).await.expect("subscriptions");
    let keys: Vec<(MessageKind, &str, &str)> = views
        .iter()
        .map(|v| (v.kind, v.subscriber.as_str(), v.message_type.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            (MessageKind::Event, "audit", PING),
            (MessageKind::Event, "billing", PING),
            (MessageKind::Event, "billing", PONG),
            (MessageKind::Command, "shipping", PONG),
        ],
        "one entry per subscription, events first, by subscriber and type"
    );
    let audit = find(&views, MessageKind::Event, PING, "audit");
    assert_eq!(processes_of(audit), ["new#0", "old#0"]);
    assert_eq!((audit.pending, audit.failed), (3, 0));
    assert_eq!(audit.service.as_deref(), Some("shop"));
    assert_eq!(audit.tenant, None);
    assert!(audit.first_seen_at <= audit.last_seen_at);
    let process = &audit.processes[0];
    assert_eq!((process.host.as_str(), process.pid), ("host-a", 4242));
    assert_eq!(process.service.as_deref(), Some("shop"));
    assert!(process.started_at <= process.last_seen_at);
    let billing = find(&views, MessageKind::Event, PING, "billing");
    assert_eq!(processes_of(billing), ["new#0"]);
    assert_eq!((billing.pending, billing.failed), (2, 1));
    let billing_pong = find(&views, MessageKind::Event, PONG, "billing");
    assert_eq!(
        (billing_pong.pending, billing_pong.failed),
        (0, 0),
        "counted per type"
    );
    let shipping = find(&views, MessageKind::Command, PONG, "shipping");
    assert_eq!(processes_of(shipping), ["old#0"]);
    assert_eq!((shipping.pending, shipping.failed), (0, 0));

    // The old process stops: its rows go, its subscriptions stay (they end only when retired).
    store.unregister("old#0").await.expect("unregister");
    let views = store.subscriptions(LIVE).await.expect("subscriptions");
    assert_eq!(
        processes_of(find(&views, MessageKind::Event, PING, "audit")),
        ["new#0"]
    );
    let shipping = find(&views, MessageKind::Command, PONG, "shipping");
    assert!(shipping.processes.is_empty());
    let states = attendance(&views, Duration::from_secs(3600));
    let state = |subscriber: &str| {
        states
            .iter()
            .find(|s| s.subscriber == subscriber)
            .map(|s| s.state)
    };
    assert_eq!(state("audit"), Some(Attendance::Running));
    assert_eq!(state("shipping"), Some(Attendance::Idle), "no live rows");
}

/// A process that was not refreshed for longer than `live_for` is not listed as live
/// (killed without unregistering); one refreshed since is.
pub async fn a_process_not_refreshed_within_live_for_is_not_live<S: Admin>(store: S) {
    let subscriptions = [subscription(MessageKind::Event, PING, "billing")];
    register(&store, "killed#0", &subscriptions).await;
    // Long enough that a loaded machine lists the process within it right after registering.
    let short = Duration::from_secs(3);
    let listed = store.subscriptions(short).await.expect("subscriptions");
    assert_eq!(
        processes_of(&listed[0]),
        ["killed#0"],
        "live right after registering"
    );
    eventually(WAIT, || async {
        let views = store.subscriptions(short).await.expect("subscriptions");
        views[0].processes.is_empty().then_some(())
    })
    .await
    .expect("the process stops counting as live once not refreshed for live_for");
    let long = store.subscriptions(LIVE).await.expect("subscriptions");
    assert_eq!(
        processes_of(&long[0]),
        ["killed#0"],
        "still within a longer live_for"
    );
    assert!(long[0].unseen_for >= short, "{:?}", long[0].unseen_for);
    register(&store, "killed#0", &subscriptions).await;
    let refreshed = store.subscriptions(short).await.expect("subscriptions");
    assert_eq!(
        processes_of(&refreshed[0]),
        ["killed#0"],
        "live again once refreshed"
    );
    assert!(refreshed[0].unseen_for < short);
}
