//! The attempts history in the `Admin` suite: every failed attempt of a row with its error,
//! in order, written with its outcome (and rolled back with it), at most
//! `MAX_ATTEMPTS_KEPT` per row, gone with the rows a purge removes.

use std::time::Duration;

use chrono::Utc;

use bandeja_core::admin::{Admin, AttemptOutcome, Discard, MessageFilter, MAX_ATTEMPTS_KEPT};
use bandeja_core::envelope::MessageId;
use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::store::{Delivery, Resolution};

use bandeja_core::config::Enabled;
use bandeja_core::envelope::{Command, Event};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Store;
use bandeja_core::tenant::{self, TenantId};

use super::{claim_and_resolve, outcome, record, unordered, ACME};
use crate::fixtures::{fast_config, Archive, Ping};
use crate::runtime::{all, emit_pings, wait_rows};
use crate::store::{emit, request};

fn retry(retry_count: u32, error: String) -> Resolution {
    Resolution::Retry {
        retry_count,
        delay: Duration::ZERO,
        error,
    }
}

/// Claims the due rows of the events outbox (of `id` among them) and writes `resolution`
/// for `id`'s row (the others released), as a worker does after an attempt.
async fn attempt<S: Admin>(store: &S, id: MessageId, resolution: Resolution) {
    let box_kind = BoxKind::OutboxEvents;
    let claimed = store.claim(box_kind, &unordered()).await.expect("claim");
    assert!(
        claimed
            .iter()
            .any(|m| m.record.id == id && m.subscriber.is_none()),
        "the row is due again"
    );
    let outcomes: Vec<_> = claimed
        .iter()
        .map(|m| {
            if m.record.id == id && m.subscriber.is_none() {
                outcome(id, None, resolution.clone())
            } else {
                outcome(m.record.id, m.subscriber.as_deref(), Resolution::Release)
            }
        })
        .collect();
    store
        .resolve(box_kind, "w", &outcomes)
        .await
        .expect("resolve");
}

/// A row that fails twice, then for good, shows its three attempts in order with their
/// errors, numbers, outcomes and worker; a completed row and a released one show none.
pub async fn failed_attempts_are_listed_in_order_with_their_errors<S: Admin>(store: S) {
    let (poison, fine) = (record(1, ACME), record(2, ACME));
    emit(&store, &[poison.clone(), fine.clone()]).await;
    let start = Utc::now() - chrono::Duration::seconds(1);
    claim_and_resolve(
        &store,
        BoxKind::OutboxEvents,
        &[
            outcome(poison.id, None, retry(1, "broker said no (1)".into())),
            outcome(fine.id, None, Resolution::Release),
        ],
    )
    .await;
    attempt(&store, poison.id, retry(2, "broker said no (2)".into())).await;
    attempt(
        &store,
        poison.id,
        Resolution::Failed {
            retry_count: 3,
            error: "broker said no (3)".into(),
        },
    )
    .await;
    attempt(&store, fine.id, Resolution::Completed).await;

    let attempts = store.attempts(poison.id).await.expect("attempts");
    let seen: Vec<_> = attempts
        .iter()
        .map(|a| (a.attempt, a.outcome, a.error.as_str()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (1, AttemptOutcome::Retried, "broker said no (1)"),
            (2, AttemptOutcome::Retried, "broker said no (2)"),
            (3, AttemptOutcome::Failed, "broker said no (3)"),
        ]
    );
    for a in &attempts {
        assert_eq!(a.box_kind, BoxKind::OutboxEvents);
        assert_eq!(a.subscriber, None);
        assert_eq!(a.worker.as_deref(), Some("w"));
        assert!(a.at >= start && a.at <= Utc::now(), "{a:?}");
    }
    assert!(attempts.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(
        store.attempts(fine.id).await.expect("attempts").is_empty(),
        "a release and a completion are not failed attempts"
    );
}

/// Inbox rows keep their attempts per subscriber; `attempts` returns those of every box
/// and subscriber of the message.
pub async fn attempts_cover_every_subscriber_of_a_message<S: Admin>(store: S) {
    let message = record(1, ACME);
    let subscribers = ["billing".to_owned(), "shipping".to_owned()];
    store
        .receive(
            MessageKind::Event,
            &[Delivery {
                record: &message,
                subscribers: &subscribers,
            }],
        )
        .await
        .expect("receive");
    claim_and_resolve(
        &store,
        BoxKind::InboxEvents,
        &[
            outcome(
                message.id,
                Some("billing"),
                retry(1, "card declined".into()),
            ),
            outcome(
                message.id,
                Some("shipping"),
                Resolution::Failed {
                    retry_count: 0,
                    error: "no address".into(),
                },
            ),
        ],
    )
    .await;
    let mut seen: Vec<_> = store
        .attempts(message.id)
        .await
        .expect("attempts")
        .into_iter()
        .map(|a| (a.box_kind, a.subscriber, a.outcome, a.error))
        .collect();
    seen.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        seen,
        vec![
            (
                BoxKind::InboxEvents,
                Some("billing".to_owned()),
                AttemptOutcome::Retried,
                "card declined".to_owned()
            ),
            (
                BoxKind::InboxEvents,
                Some("shipping".to_owned()),
                AttemptOutcome::Failed,
                "no address".to_owned()
            ),
        ]
    );
}

/// A row failing more than `MAX_ATTEMPTS_KEPT` times keeps its latest attempts only;
/// another row's attempts are not touched by its pruning.
pub async fn only_the_latest_attempts_of_a_row_are_kept<S: Admin>(store: S) {
    let (busy, other) = (record(1, ACME), record(2, ACME));
    emit(&store, &[busy.clone(), other.clone()]).await;
    let total = MAX_ATTEMPTS_KEPT + 5;
    claim_and_resolve(
        &store,
        BoxKind::OutboxEvents,
        &[
            outcome(busy.id, None, retry(1, "fail 1".into())),
            outcome(other.id, None, retry(1, "other fail".into())),
        ],
    )
    .await;
    for n in 2..=total {
        let count = u32::try_from(n).expect("small");
        attempt(&store, busy.id, retry(count, format!("fail {n}"))).await;
    }
    let kept = store.attempts(busy.id).await.expect("attempts");
    let errors: Vec<_> = kept.iter().map(|a| a.error.clone()).collect();
    let latest: Vec<_> = (total - MAX_ATTEMPTS_KEPT + 1..=total)
        .map(|n| format!("fail {n}"))
        .collect();
    assert_eq!(
        errors, latest,
        "the latest {MAX_ATTEMPTS_KEPT}, oldest first"
    );
    let other_attempts = store.attempts(other.id).await.expect("attempts");
    assert_eq!(other_attempts.len(), 1);
    assert_eq!(other_attempts[0].error, "other fail");
}

/// Begins a transaction and writes in it, as worker `w`, a retry of the events outbox row
/// of `id` with `error`; returns the transaction and how many rows it changed.
async fn retry_in_a_transaction<S: Store>(store: &S, id: MessageId, error: &str) -> (S::Tx, u64) {
    let mut tx = store.begin().await.expect("begin");
    let written = store
        .resolve_in(
            &mut tx,
            BoxKind::OutboxEvents,
            "w",
            &[outcome(id, None, retry(1, error.into()))],
        )
        .await
        .expect("resolve in the transaction");
    (tx, written)
}

/// An attempt is written in the transaction of its outcome: rolled back with it.
pub async fn an_attempt_rolls_back_with_its_outcome<S: Admin>(store: S) {
    let message = record(1, ACME);
    emit(&store, std::slice::from_ref(&message)).await;
    store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    let (tx, written) = retry_in_a_transaction(&store, message.id, "rolled back").await;
    assert_eq!(written, 1);
    drop(tx);
    assert!(
        store
            .attempts(message.id)
            .await
            .expect("attempts")
            .is_empty(),
        "no attempt outlives its rolled-back outcome"
    );
    let (tx, _) = retry_in_a_transaction(&store, message.id, "committed").await;
    store.commit(tx).await.expect("commit");
    let attempts = store.attempts(message.id).await.expect("attempts");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].error, "committed");
}

/// Attempts go with their row: a purge removes those of the rows it deletes, while a FAILED
/// row's and a discarded row's stay; purging the archive removes the discarded row's.
pub async fn attempts_go_with_the_rows_a_purge_removes<S: Admin>(store: S) {
    let (done, failed, discarded) = (record(1, ACME), record(2, ACME), record(3, ACME));
    emit(&store, &[done.clone(), failed.clone(), discarded.clone()]).await;
    let error = |n: u32| Resolution::Failed {
        retry_count: n,
        error: "gave up".into(),
    };
    claim_and_resolve(
        &store,
        BoxKind::OutboxEvents,
        &[
            outcome(done.id, None, retry(1, "once".into())),
            outcome(failed.id, None, error(1)),
            outcome(discarded.id, None, error(1)),
        ],
    )
    .await;
    attempt(&store, done.id, Resolution::Completed).await;
    let one = MessageFilter {
        id: Some(discarded.id),
        ..Default::default()
    };
    let discard = Discard {
        by: "alice".into(),
        reason: "poison".into(),
    };
    assert_eq!(store.discard(&one, &discard).await.expect("discard"), 1);

    let future = Utc::now() + chrono::Duration::hours(1);
    assert_eq!(
        store
            .purge(BoxKind::OutboxEvents, future)
            .await
            .expect("purge"),
        1
    );
    assert!(store.attempts(done.id).await.expect("attempts").is_empty());
    assert_eq!(store.attempts(failed.id).await.expect("attempts").len(), 1);
    assert_eq!(
        store.attempts(discarded.id).await.expect("attempts").len(),
        1,
        "a discarded row keeps its attempts while it is archived"
    );
    store
        .purge_archive(BoxKind::OutboxEvents, future)
        .await
        .expect("purge the archive");
    assert!(store
        .attempts(discarded.id)
        .await
        .expect("attempts")
        .is_empty());
    assert_eq!(store.attempts(failed.id).await.expect("attempts").len(), 1);
}

/// A handler that always fails with the attempt's number.
#[derive(Clone)]
struct AlwaysFails;

impl<S: Store> EventHandler<S, Ping> for AlwaysFails {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        _event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        Err(format!("card declined (attempt {})", ctx.retry_count() + 1).into())
    }
}

/// Run by the runtime: a handler failing until `max-retries` leaves one attempt per run
/// (RETRIED, RETRIED, FAILED) with its errors, and a command nobody handles one FAILED
/// attempt with the routing error, whichever way the store dispatches.
pub async fn the_runtime_records_every_failed_attempt<S: Admin>(store: S) {
    let mut config = fast_config();
    config.events_inbox.max_retries = 2;
    config.commands_outbox.enabled = Enabled::On;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>("billing", AlwaysFails)
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let ids = emit_pings(&store, 0..1, |_| "k".into()).await;
    let command = tenant::scope(TenantId::new(ACME).expect("tenant"), async {
        Command::to_self("archiver", Archive { n: 1 })
    })
    .await
    .expect("command");
    bandeja.send(&command).await.expect("send");
    wait_rows(&store, BoxKind::InboxEvents, all(MessageStatus::Failed, 1)).await;
    wait_rows(
        &store,
        BoxKind::OutboxCommands,
        all(MessageStatus::Failed, 1),
    )
    .await;
    running.shutdown().await;

    let seen: Vec<_> = store
        .attempts(ids[0])
        .await
        .expect("attempts")
        .into_iter()
        .map(|a| (a.box_kind, a.subscriber, a.attempt, a.outcome, a.error))
        .collect();
    let billing = |n: u32, outcome| {
        (
            BoxKind::InboxEvents,
            Some("billing".to_owned()),
            n,
            outcome,
            format!("card declined (attempt {n})"),
        )
    };
    assert_eq!(
        seen,
        vec![
            billing(1, AttemptOutcome::Retried),
            billing(2, AttemptOutcome::Retried),
            billing(3, AttemptOutcome::Failed),
        ]
    );
    let unrouted = store.attempts(command.id).await.expect("attempts");
    assert_eq!(unrouted.len(), 1, "{unrouted:?}");
    assert_eq!(unrouted[0].box_kind, BoxKind::OutboxCommands);
    assert_eq!(unrouted[0].outcome, AttemptOutcome::Failed);
    assert!(
        unrouted[0].error.contains("no handler for command type"),
        "{unrouted:?}"
    );
}
