//! The health verdict drawn from the subscriptions: down, naming a subscription no live
//! process attends.

use std::time::Duration;

use bandeja_core::admin::{attendance, Admin, Attendance, SubscriberState};
use bandeja_core::record::MessageKind;
use bandeja_core::testing::eventually;

use super::{received, register, subscription, LIVE, PING, WAIT};

/// The verdict `/health` draws: a subscription with live rows and no live process waits
/// while it was refreshed within the stuck threshold, and is unattended (naming it, its
/// kind, types and pending count) once not refreshed for longer; running again once a
/// process registers it.
pub async fn health_turns_down_naming_an_unattended_subscription<S: Admin>(store: S) {
    let subscriptions = [
        subscription(MessageKind::Event, PING, "billing"),
        subscription(MessageKind::Event, PING, "audit"),
    ];
    register(&store, "old#0", &subscriptions).await;
    received(&store, 0, 3, &["billing"]).await;
    let verdict = |threshold: Duration| {
        let store = &store;
        async move {
            let views = store.subscriptions(LIVE).await.expect("subscriptions");
            attendance(&views, threshold)
        }
    };
    let of = |states: &[SubscriberState], subscriber: &str| {
        states
            .iter()
            .find(|s| s.subscriber == subscriber)
            .cloned()
            .unwrap_or_else(|| panic!("no {subscriber} in {states:#?}"))
    };
    assert_eq!(
        of(&verdict(LIVE).await, "billing").state,
        Attendance::Running
    );
    store.unregister("old#0").await.expect("the process stops");

    let waiting = of(&verdict(LIVE).await, "billing");
    assert_eq!(
        waiting.state,
        Attendance::Waiting,
        "refreshed within the threshold"
    );
    assert_eq!(waiting.pending, 3);
    assert!(
        waiting
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("waiting")),
        "{waiting:?}"
    );
    assert_eq!(
        of(&verdict(LIVE).await, "audit").state,
        Attendance::Idle,
        "no rows"
    );

    let threshold = Duration::from_millis(300);
    let unattended = eventually(WAIT, || async {
        let state = of(&verdict(threshold).await, "billing");
        (state.state == Attendance::Unattended).then_some(state)
    })
    .await
    .expect("unattended once not refreshed for longer than the threshold");
    let reason = unattended.reason.clone().unwrap_or_default();
    for needle in [
        "`billing`",
        "events: conformance.Ping",
        "3 pending row(s)",
        "no live process",
    ] {
        assert!(reason.contains(needle), "{needle}: {reason}");
    }
    assert_eq!(unattended.types, [PING]);
    assert_eq!(unattended.kind, MessageKind::Event);
    assert_eq!(
        of(&verdict(threshold).await, "audit").state,
        Attendance::Idle
    );

    register(&store, "new#0", &subscriptions).await;
    assert_eq!(
        of(&verdict(threshold).await, "billing").state,
        Attendance::Running
    );
}
