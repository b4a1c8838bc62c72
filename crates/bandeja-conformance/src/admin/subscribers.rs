//! The subscription checks of the `Admin` suite: the listing with live processes and
//! inbox rows, retirement (refused while live, discard, keep) and the verdict `/health`
//! draws from them.

use std::time::Duration;

use crate::store::{emit, ping, request, rows};
use bandeja_core::admin::{
    attendance, kept_reason, Admin, Attendance, MessageFilter, RetireRefused, Settle,
    SubscriberState, SubscriptionView,
};
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{ClaimRequest, Delivery, Outcome, Resolution, Store};
use bandeja_core::subscriptions::{Registration, Subscription};
use bandeja_core::testing::eventually;
use bandeja_core::transport::wire::REJECTED_SUBSCRIBER;

/// How long a check waits for a condition.
const WAIT: Duration = Duration::from_secs(20);
/// `live_for` for processes that must count as live throughout a check.
const LIVE: Duration = Duration::from_secs(600);
const PING: &str = "conformance.Ping";
const PONG: &str = "conformance.Pong";

fn subscription(kind: MessageKind, message_type: &str, subscriber: &str) -> Subscription {
    Subscription {
        kind,
        message_type: message_type.into(),
        subscriber: subscriber.into(),
        tenant: None,
    }
}

/// Registers process `process` (service `shop`) running `subscriptions`.
async fn register<S: Store>(store: &S, process: &str, subscriptions: &[Subscription]) {
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
async fn received<S: Store>(
    store: &S,
    from: u64,
    n: u64,
    subscribers: &[&str],
) -> Vec<MessageRecord> {
    let records: Vec<MessageRecord> = (from..from + n)
        .map(|i| ping(i, &format!("sub-{i}")))
        .collect();
    let subscribers: Vec<String> = subscribers.iter().map(|s| (*s).to_owned()).collect();
    let deliveries: Vec<Delivery<'_>> = records
        .iter()
        .map(|record| Delivery {
            record,
            subscribers: &subscribers,
        })
        .collect();
    store
        .receive(MessageKind::Event, &deliveries)
        .await
        .expect("receive");
    records
}

/// Claims the due rows of `subscriber` in the events inbox as `worker` with `lease`.
async fn claim_of<S: Store>(
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
async fn statuses_of<S: Admin>(
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

fn find<'a>(
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
fn settled(mut views: Vec<SubscriptionView>) -> Vec<SubscriptionView> {
    for view in &mut views {
        view.unseen_for = Duration::ZERO;
    }
    views
}

fn processes_of(view: &SubscriptionView) -> Vec<&str> {
    view.processes.iter().map(|p| p.process.as_str()).collect()
}

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

/// Retire refuses, changing nothing, while a live process runs the subscriber (naming it),
/// for an unknown name (suggesting a close one), for `bandeja.rejected`; SQL metacharacters
/// in the name are a name like any other.
pub async fn retire_is_refused_while_a_live_process_runs_it<S: Admin>(store: S) {
    let subscriptions = [subscription(MessageKind::Event, PING, "billing")];
    register(&store, "web-1#0", &subscriptions).await;
    received(&store, 0, 2, &["billing"]).await;
    let before = (
        settled(store.subscriptions(LIVE).await.expect("subscriptions")),
        statuses_of(&store, "billing").await,
    );
    for settle in [Settle::Discard, Settle::Keep] {
        let error = store
            .retire(None, "billing", settle, LIVE)
            .await
            .expect_err("refused while a live process runs it");
        match RetireRefused::of(&error) {
            Some(RetireRefused::Running {
                subscriber,
                processes,
            }) => {
                assert_eq!(subscriber, "billing");
                let names: Vec<&str> = processes.iter().map(|p| p.process.as_str()).collect();
                assert_eq!(names, ["web-1#0"]);
            }
            other => panic!("expected a refusal naming the live process, got {other:?}: {error}"),
        }
        let text = error.to_string();
        assert!(text.contains("web-1#0 on host-a (pid 4242"), "{text}");
        assert!(text.contains("stop them first"), "{text}");
    }
    let after = (
        settled(store.subscriptions(LIVE).await.expect("subscriptions")),
        statuses_of(&store, "billing").await,
    );
    assert_eq!(before, after, "a refused retirement changes nothing");

    // Another kind is another subscription: no live process runs `billing` for commands,
    // and nothing of that kind has the name.
    let error = store
        .retire(Some(MessageKind::Command), "billing", Settle::Discard, LIVE)
        .await
        .expect_err("no command subscription `billing`");
    assert!(
        matches!(
            RetireRefused::of(&error),
            Some(RetireRefused::Unknown { .. })
        ),
        "{error}"
    );

    let error = store
        .retire(None, "biling", Settle::Discard, LIVE)
        .await
        .expect_err("unknown");
    match RetireRefused::of(&error) {
        Some(RetireRefused::Unknown { suggestion, .. }) => {
            assert_eq!(suggestion.as_deref(), Some("billing"), "{error}");
        }
        other => panic!("expected an unknown subscriber, got {other:?}: {error}"),
    }
    assert!(
        error.to_string().contains("did you mean `billing`?"),
        "{error}"
    );

    let error = store
        .retire(None, REJECTED_SUBSCRIBER, Settle::Discard, LIVE)
        .await
        .expect_err("bandeja.rejected is not a subscription");
    assert_eq!(RetireRefused::of(&error), Some(&RetireRefused::Rejected));

    let hostile = "billing'; DROP TABLE subscriptions; --";
    let error = store
        .retire(None, hostile, Settle::Discard, Duration::ZERO)
        .await
        .expect_err("a name no subscription has");
    assert!(
        matches!(
            RetireRefused::of(&error),
            Some(RetireRefused::Unknown { .. })
        ),
        "{error}"
    );
    assert_eq!(
        settled(
            store
                .subscriptions(LIVE)
                .await
                .expect("the table is still there")
        ),
        after.0
    );
}

/// `Settle::Discard`: the subscription and its stopped processes' rows go, its live and
/// FAILED rows are deleted, its COMPLETED rows (and other subscribers' rows) stay; a relay
/// afterwards creates no row for it, and a process that registers it again starts a new
/// subscription.
pub async fn retire_discard_removes_the_subscription_and_its_rows<S: Admin>(store: S) {
    let subscriptions = [
        subscription(MessageKind::Event, PING, "audit"),
        subscription(MessageKind::Event, PING, "billing"),
        subscription(MessageKind::Event, PONG, "billing"),
    ];
    register(&store, "old#0", &subscriptions).await;
    let first_seen = store.subscriptions(LIVE).await.expect("subscriptions")[1].first_seen_at;
    let records = received(&store, 0, 4, &["audit", "billing"]).await;
    // billing: one COMPLETED, one FAILED, one PROCESSING whose lease ran out, one PENDING.
    assert_eq!(claim_of(&store, "w", "billing", LIVE, 2).await, 2);
    let done = |i: usize, resolution| Outcome {
        id: records[i].id,
        subscriber: Some("billing".into()),
        resolution,
    };
    let claimed: Vec<usize> = {
        let held = statuses_of(&store, "billing").await;
        (0..records.len())
            .filter(|i| {
                held.iter()
                    .any(|(id, s, _)| *id == records[*i].id && *s == MessageStatus::Processing)
            })
            .collect()
    };
    store
        .resolve(
            BoxKind::InboxEvents,
            "w",
            &[
                done(claimed[0], Resolution::Completed),
                done(
                    claimed[1],
                    Resolution::Failed {
                        retry_count: 3,
                        error: "boom".into(),
                    },
                ),
            ],
        )
        .await
        .expect("resolve");
    expire_one_lease(&store, "billing").await;
    store.unregister("old#0").await.expect("the process stops");

    let report = store
        .retire(Some(MessageKind::Event), "billing", Settle::Discard, LIVE)
        .await
        .expect("retire");
    assert_eq!(report.subscriber, "billing");
    assert_eq!(report.settle, Settle::Discard);
    let retired: Vec<(&str, Option<&str>)> = report
        .subscriptions
        .iter()
        .map(|s| (s.message_type.as_str(), s.tenant.as_deref()))
        .collect();
    assert_eq!(retired, [(PING, None), (PONG, None)]);
    assert_eq!(
        (report.discarded, report.discarded_failed, report.kept),
        (2, 1, 0)
    );
    assert_eq!(report.in_flight, 0);
    let left = statuses_of(&store, "billing").await;
    let left: Vec<MessageStatus> = left.into_iter().map(|(_, s, _)| s).collect();
    assert_eq!(left, [MessageStatus::Completed], "its history stays");
    assert_eq!(
        statuses_of(&store, "audit").await.len(),
        4,
        "other subscribers untouched"
    );
    let views = store.subscriptions(LIVE).await.expect("subscriptions");
    let names: Vec<&str> = views.iter().map(|v| v.subscriber.as_str()).collect();
    assert_eq!(names, ["audit"]);

    // The relay fans out from the table: a message relayed now gets no row for billing.
    let routes = store
        .routes(MessageKind::Event, None)
        .await
        .expect("routes");
    assert!(
        routes.iter().all(|r| r.subscriber != "billing"),
        "{routes:?}"
    );
    let late = ping(99, "late");
    emit(&store, std::slice::from_ref(&late)).await;
    let relayed = store
        .relay(MessageKind::Event, &request("relay", 10))
        .await
        .expect("relay");
    if relayed.is_some() {
        let got: Vec<Option<String>> = rows(&store, BoxKind::InboxEvents)
            .await
            .into_iter()
            .filter(|r| r.message.record.id == late.id)
            .map(|r| r.message.subscriber)
            .collect();
        assert_eq!(
            got,
            [Some("audit".to_owned())],
            "no row for the retired subscriber"
        );
    }

    // Retiring again: nothing is left of it.
    let error = store
        .retire(Some(MessageKind::Event), "billing", Settle::Discard, LIVE)
        .await
        .expect_err("nothing left to retire");
    assert!(
        matches!(
            RetireRefused::of(&error),
            Some(RetireRefused::Unknown { .. })
        ),
        "{error}"
    );

    // A process started later with the subscriber registers it again, as a new subscription.
    register(&store, "new#0", &subscriptions[1..]).await;
    let views = store.subscriptions(LIVE).await.expect("subscriptions");
    let again = find(&views, MessageKind::Event, PING, "billing");
    assert!(again.first_seen_at >= first_seen);
    assert_eq!((again.pending, again.failed), (0, 0));
}

/// Has one PROCESSING row of `subscriber` (claimed with a 1 ms lease) whose lease ran out.
async fn expire_one_lease<S: Admin>(store: &S, subscriber: &str) {
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

/// `Settle::Keep`: live rows (PENDING, PROCESSING whose lease ran out) become FAILED with
/// the reason, kept for inspection and retryable; a row still under a lease is left (in
/// flight); FAILED and COMPLETED rows keep their state.
pub async fn retire_keep_fails_the_rows_with_the_reason<S: Admin>(store: S) {
    let subscriptions = [subscription(MessageKind::Event, PING, "billing")];
    register(&store, "old#0", &subscriptions).await;
    received(&store, 0, 3, &["billing"]).await;
    // One row held under a live lease by a worker that is still busy with it.
    assert_eq!(claim_of(&store, "busy", "billing", LIVE, 1).await, 1);
    expire_one_lease(&store, "billing").await;
    store.unregister("old#0").await.expect("the process stops");

    let report = store
        .retire(None, "billing", Settle::Keep, LIVE)
        .await
        .expect("retire");
    assert_eq!(
        (report.kept, report.discarded, report.discarded_failed),
        (2, 0, 0)
    );
    assert_eq!(report.in_flight, 1);
    assert_eq!(report.subscriptions.len(), 1);
    let rows_now = statuses_of(&store, "billing").await;
    let reason = kept_reason("billing");
    let kept: Vec<_> = rows_now
        .iter()
        .filter(|(_, s, _)| *s == MessageStatus::Failed)
        .collect();
    assert_eq!(kept.len(), 2, "{rows_now:?}");
    for (_, _, error) in &kept {
        assert_eq!(error.as_deref(), Some(reason.as_str()));
    }
    assert!(reason.contains("subscription `billing` retired by an operator"));
    assert_eq!(
        rows_now
            .iter()
            .filter(|(_, s, _)| *s == MessageStatus::Processing)
            .count(),
        1,
        "the row under a live lease is left to its holder"
    );
    assert!(store
        .subscriptions(LIVE)
        .await
        .expect("subscriptions")
        .is_empty());

    // Kept rows are retryable by an operator.
    let retried = store
        .retry(&MessageFilter {
            subscriber: Some("billing".into()),
            ..MessageFilter::default()
        })
        .await
        .expect("retry");
    assert_eq!(retried, 2);
}

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
