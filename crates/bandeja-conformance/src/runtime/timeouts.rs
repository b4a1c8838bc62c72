//! Time limits of one attempt: a hung handler is stopped at its own limit (per handler or
//! per group), which releases its lease; the limits' mistakes are startup errors.

use std::time::Duration;

use bandeja_core::config::{Config, ConfigErrorKind};
use bandeja_core::envelope::Event;
use bandeja_core::error::{BuildErrorKind, Error};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView};
use bandeja_core::tenant::TenantId;
use bandeja_core::testing::eventually;

use super::recorder::{Behaviour, Recorder};
use super::{emit_pings, wait_rows, WAIT};
use crate::fixtures::outbox_of;
use crate::fixtures::{fast_config, Ping};

/// A handler that hangs, with a per-handler timeout far below the group's limit (here the
/// lease, `lock-at-most-for` = 10 s): each attempt is stopped after its own limit and fails
/// with a timeout error; the row goes back to PENDING with its lease released, long before
/// the lease would have expired, then FAILED after `max-retries`. Meanwhile messages of
/// other keys and of another tenant, emitted while it hangs, are handled: delayed at most by
/// the hung attempt in progress, a polling interval and a backoff, never by the lease.
pub async fn hung_handler_times_out_and_releases_its_lease_while_others_proceed<S: Inspect>(
    store: S,
) {
    let limit = Duration::from_millis(300);
    let backoff = Duration::from_millis(250);
    let recorder = Recorder::new(Behaviour::HangOn(0));
    let mut config = fast_config();
    config.events_inbox.max_retries = 1;
    config.events_inbox.retry_backoff_initial = backoff;
    config.events_inbox.retry_backoff_max = backoff;
    let lease = config.events_inbox.lock_at_most_for;
    let polling = config.events_inbox.polling_interval;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("stuck", recorder.clone())
        .handler_timeout("stuck", limit)
        .build()
        .expect("build");
    assert_eq!(
        bandeja
            .config()
            .events_inbox
            .effective_handler_timeout(Some("stuck")),
        limit
    );
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k0".into()).await;
    eventually(WAIT, || async { (recorder.attempts() == 1).then_some(()) })
        .await
        .expect("the handler started hanging");
    let hung_at = std::time::Instant::now();
    let other_tenant = TenantId::new("tenant-b").expect("tenant");
    let outbox = outbox_of(&store);
    let mut tx = store.begin().await.expect("begin");
    let healthy = [
        Event::new("Ping", "k1", Ping { n: 1 }),
        Event::new("Ping", "k2", Ping { n: 2 }).with_tenant(other_tenant.clone()),
    ];
    for event in &healthy {
        outbox.emit(&mut *tx, event).await.expect("emit");
    }
    store.commit(tx).await.expect("commit");
    let emitted_at = std::time::Instant::now();
    let is_hung =
        |r: &RowView| r.message.record.id != healthy[0].id && r.message.record.id != healthy[1].id;
    let (healthy_took, released) = tokio::join!(
        async {
            wait_rows(&store, BoxKind::InboxEvents, |rows| {
                rows.iter()
                    .filter(|r| !is_hung(r))
                    .filter(|r| r.message.status == MessageStatus::Completed)
                    .count()
                    == 2
            })
            .await;
            emitted_at.elapsed()
        },
        async {
            let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
                rows.iter().any(|r| {
                    is_hung(r)
                        && r.message.status == MessageStatus::Pending
                        && r.message.retry_count == 1
                })
            })
            .await;
            (hung_at.elapsed(), rows.into_iter().find(|r| is_hung(r)))
        }
    );
    let (released_after, released) = released;
    let released = released.expect("the hung row");
    assert_eq!(released.locked_by, None, "the lease was released");
    let error = released.message.last_error.clone().unwrap_or_default();
    assert!(
        error.contains("timed out after PT0.3S")
            && error.contains("events.inbox.handler-timeouts.stuck"),
        "{error}"
    );
    assert!(
        released_after < lease / 4,
        "the hung attempt was stopped after {released_after:?}, the lease is {lease:?}"
    );
    let bound = limit + polling + backoff + Duration::from_millis(500);
    assert!(
        healthy_took < bound,
        "healthy messages took {healthy_took:?} (bound {bound:?}: the hung attempt in progress, a polling interval, a backoff and a margin)"
    );
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.iter()
            .any(|r| is_hung(r) && r.message.status == MessageStatus::Failed)
    })
    .await;
    let failed_after = hung_at.elapsed();
    running.shutdown().await;
    let failed = rows.iter().find(|r| is_hung(r)).expect("the hung row");
    assert_eq!(
        (failed.message.retry_count, failed.locked_by.as_deref()),
        (1, None)
    );
    assert!(failed
        .message
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("timed out after PT0.3S")));
    assert!(
        failed_after < lease / 2,
        "two hung attempts took {failed_after:?}: each must end at its own limit, not at the lease ({lease:?})"
    );
    assert_eq!(recorder.tries_of(0), vec![0, 1]);
    assert_eq!(recorder.handled(), vec![1, 2]);
    let tenants: Vec<_> = rows
        .iter()
        .filter(|r| !is_hung(r))
        .map(|r| r.message.record.inbox_tenant().clone())
        .collect();
    assert!(tenants.contains(&other_tenant), "{tenants:?}");
}

/// A subscriber's own time limit (here from the configuration, `handler-timeouts`) overrides
/// the group's `handler-timeout` for that subscriber only: on the same slow handler, the
/// subscriber with a short limit times out (and ends FAILED), the one on the group's longer
/// limit completes.
pub async fn per_handler_timeout_overrides_the_group_timeout<S: Inspect>(store: S) {
    let slow = Behaviour::Pause(Duration::from_millis(500));
    let (patient, impatient) = (Recorder::new(slow), Recorder::new(slow));
    let mut config = fast_config();
    config.events_inbox.max_retries = 1;
    config.events_inbox.handler_timeout = Duration::from_secs(3);
    config.events_inbox = config
        .events_inbox
        .handler_timeout_for("impatient", Duration::from_millis(150));
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("patient", patient.clone())
        .on_event::<Ping, _>("impatient", impatient.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..1, |_| "k".into()).await;
    let rows = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.len() == 2 && rows.iter().all(|r| r.message.status.is_terminal())
    })
    .await;
    running.shutdown().await;
    let row = |name: &str| {
        rows.iter()
            .find(|r| r.message.subscriber.as_deref() == Some(name))
            .expect("row")
    };
    let (done, failed) = (row("patient"), row("impatient"));
    assert_eq!(
        (done.message.status, done.message.retry_count),
        (MessageStatus::Completed, 0)
    );
    assert_eq!(
        (failed.message.status, failed.message.retry_count),
        (MessageStatus::Failed, 1)
    );
    let error = failed.message.last_error.clone().unwrap_or_default();
    assert!(
        error.contains("timed out after PT0.15S")
            && error.contains("events.inbox.handler-timeouts.impatient"),
        "{error}"
    );
    assert_eq!(patient.handled(), vec![0]);
    assert_eq!(impatient.tries_of(0), vec![0, 1]);
    assert!(
        impatient.handled().is_empty(),
        "no attempt finished in time"
    );
}

/// Per-handler time limits are checked at startup: a subscriber name no handler is
/// registered under (in code or in the configuration) and a zero limit are errors naming
/// the setting; a configuration entry takes precedence over the builder's.
pub async fn per_handler_timeout_mistakes_are_startup_errors<S: Inspect>(store: S) {
    let build = |config: Config, code: Option<(&str, Duration)>| {
        let mut builder = Bandeja::builder(store.clone())
            .config(config)
            .on_event::<Ping, _>("s", Recorder::new(Behaviour::Succeed));
        if let Some((name, timeout)) = code {
            builder = builder.handler_timeout(name, timeout);
        }
        builder.build()
    };
    let rejected = |result: bandeja_core::error::Result<Bandeja<S>>| {
        let error = result.err().expect("build must fail");
        let text = error.to_string();
        match error {
            Error::Config(e) if e.kind() == ConfigErrorKind::InvalidValue => {
                (e.key().unwrap_or_default().to_owned(), text)
            }
            other => panic!("expected an invalid value, got {other}"),
        }
    };
    let built_wrong = |result: bandeja_core::error::Result<Bandeja<S>>| {
        let error = result.err().expect("build must fail");
        let text = error.to_string();
        match error {
            Error::Build(e) => (e.kind(), e.subscriber().map(str::to_owned), text),
            other => panic!("expected a build error, got {other}"),
        }
    };
    let second = Duration::from_secs(1);
    let (kind, name, message) = built_wrong(build(Config::default(), Some(("ghost", second))));
    assert_eq!(kind, BuildErrorKind::UnknownSubscriber);
    assert_eq!(name.as_deref(), Some("ghost"));
    assert!(
        message.contains("handler_timeout(\"ghost\")")
            && message.contains(
                "no handler is registered under the subscriber name `ghost` (registered: `s`)"
            ),
        "{message}"
    );
    let (kind, name, message) = built_wrong(build(Config::default(), Some(("s", Duration::ZERO))));
    assert_eq!(
        (kind, name.as_deref()),
        (BuildErrorKind::HandlerTimeout, Some("s"))
    );
    assert!(
        message.contains("(\"s\")") && message.contains("greater than zero"),
        "{message}"
    );
    let with = |group: BoxKind, name: &str, timeout: Duration| {
        let mut config = Config::default();
        let settings = config.group_mut(group);
        *settings = settings.clone().handler_timeout_for(name, timeout);
        config
    };
    let cases = [
        (
            with(BoxKind::InboxEvents, "ghost", second),
            "events.inbox.handler-timeouts.ghost",
            "no event handler is registered under the subscriber name `ghost`",
        ),
        (
            with(BoxKind::InboxCommands, "s", second),
            "commands.inbox.handler-timeouts.s",
            "no command handler is registered under the subscriber name `s`",
        ),
        (
            with(BoxKind::InboxEvents, "s", Duration::ZERO),
            "events.inbox.handler-timeouts.s",
            "greater than zero",
        ),
        (
            with(BoxKind::OutboxEvents, "s", second),
            "events.outbox.handler-timeouts.s",
            "an outbox has no subscribers",
        ),
    ];
    for (config, expected_key, reason) in cases {
        let (key, message) = rejected(build(config, None));
        assert_eq!(key, expected_key);
        assert!(message.contains(reason), "{message}");
    }
    let configured = with(BoxKind::InboxEvents, "s", Duration::from_secs(2));
    let bandeja = build(configured, Some(("s", second))).expect("build");
    assert_eq!(
        bandeja.config().events_inbox.handler_timeouts.get("s"),
        Some(&Duration::from_secs(2)),
        "the configuration's entry wins over the builder's"
    );
    let bandeja = build(Config::default(), Some(("s", second))).expect("build");
    let inbox = &bandeja.config().events_inbox;
    assert_eq!(inbox.effective_handler_timeout(Some("s")), second);
    assert_eq!(
        inbox.effective_handler_timeout(Some("unnamed")),
        inbox.handler_timeout,
        "without an entry, the group's handler-timeout (PT5M), not capped by the lease (PT20S): the lease is renewed"
    );
}
