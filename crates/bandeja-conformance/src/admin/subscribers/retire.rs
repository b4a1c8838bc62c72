//! Retiring a subscription: refused while a live process runs it; `discard` removes it and
//! its rows, `keep` fails its rows with the reason.

use std::time::Duration;

use bandeja_core::admin::{kept_reason, Admin, MessageFilter, RetireRefused, Settle};
use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Outcome, Resolution};
use bandeja_core::transport::wire::REJECTED_SUBSCRIBER;

use super::{
    claim_of, expire_one_lease, find, received, register, settled, statuses_of, subscription, LIVE,
    PING, PONG,
};
use crate::store::{emit, ping, request, rows};

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
