//! The outbox replay checks of the `Admin` suite ([`Admin::replay_outbox`]): through the
//! public runtime API (builder `.on_event`, `start`, `emit`), so they hold whichever way
//! the relay finds the subscribers of a message.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;

use super::super::runtime::{fast_config, wait_rows, Pong};
use super::super::{rows, Ping};
use crate::admin::{Admin, MessageFilter, OutboxReplay, Page, ReplayRefused};
use crate::config::{CompletionMode, CompletionModes, Config};
use crate::envelope::{Event, MessageId, Payload};
use crate::error::HandlerError;
use crate::processing::{EventHandler, HandlerContext};
use crate::record::BoxKind;
use crate::runtime::{Bandeja, Running};
use crate::status::MessageStatus;
use crate::store::{Outcome, Resolution, RowView, Store};
use crate::testing::eventually;

const WAIT: Duration = Duration::from_secs(20);

/// Counts handler calls: (subscriber, payload number), in call order.
#[derive(Clone, Default)]
struct Calls(Arc<Mutex<Vec<(String, u64)>>>);

impl Calls {
    fn all(&self) -> Vec<(String, u64)> {
        self.0.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The payload numbers `subscriber` handled, sorted (a number twice: handled twice).
    fn of(&self, subscriber: &str) -> Vec<u64> {
        let mut ns: Vec<u64> = self
            .all()
            .into_iter()
            .filter(|(s, _)| s == subscriber)
            .map(|(_, n)| n)
            .collect();
        ns.sort_unstable();
        ns
    }
}

impl<S: Store> EventHandler<S, Pong> for Calls {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<Pong>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut calls) = self.0.lock() {
            calls.push((ctx.subscriber().to_owned(), event.payload.n));
        }
        Ok(())
    }
}

impl<S: Store> EventHandler<S, Ping> for Calls {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut calls) = self.0.lock() {
            calls.push((ctx.subscriber().to_owned(), event.payload.n));
        }
        Ok(())
    }
}

/// A runtime on `store` running `subscribers` of [`Ping`] (and `pong` of [`Pong`]), all
/// counted by `calls`.
async fn start<S: Store>(
    store: &S,
    config: Config,
    subscribers: &[&str],
    calls: &Calls,
) -> (Bandeja<S>, Running) {
    let mut builder = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Pong, _>("pong", calls.clone());
    for subscriber in subscribers {
        builder = builder.on_event::<Ping, _>(subscriber, calls.clone());
    }
    let bandeja = builder.build().expect("build");
    let running = bandeja.start().await.expect("start");
    (bandeja, running)
}

/// Emits pings `range` through `bandeja` (one transaction each); their ids.
async fn emit<S: Store>(bandeja: &Bandeja<S>, range: std::ops::Range<u64>) -> Vec<MessageId> {
    let mut ids = Vec::new();
    for n in range {
        let event = Event::new("Ping", format!("k{n}"), Ping { n });
        ids.push(event.id);
        bandeja.emit(&event).await.expect("emit");
    }
    ids
}

fn settled(n: usize) -> impl Fn(&[RowView]) -> bool {
    move |rows| {
        rows.len() == n
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed)
    }
}

fn of_type(message_type: &str) -> OutboxReplay {
    OutboxReplay::new(MessageFilter {
        message_type: Some(message_type.to_owned()),
        ..Default::default()
    })
}

/// `(id, subscriber) -> (delivery_count, status)` of the events inbox.
async fn inbox<S: Admin>(store: &S) -> BTreeMap<(MessageId, String), (u32, MessageStatus)> {
    rows(store, BoxKind::InboxEvents)
        .await
        .into_iter()
        .map(|r| {
            let m = r.message;
            let key = (m.record.id, m.subscriber.unwrap_or_default());
            (key, (m.delivery_count, m.status))
        })
        .collect()
}

/// Replay by type: the COMPLETED outbox rows of the type go back to PENDING (due now, the
/// resubmission recorded, the outbox worker woken), other types untouched; relayed again,
/// the inbox absorbs them: still one row per `(id, subscriber)`, COMPLETED, delivered
/// twice, the handler not run again.
pub async fn outbox_replay_resends_completed_rows_and_the_inbox_absorbs_them<S: Admin>(store: S) {
    let calls = Calls::default();
    let (bandeja, running) = start(&store, fast_config(), &["a"], &calls).await;
    let ids = emit(&bandeja, 0..3).await;
    let other = Event::new("Ping", "k9", Pong { n: 9 });
    bandeja.emit(&other).await.expect("emit");
    wait_rows(&store, BoxKind::OutboxEvents, settled(4)).await;
    wait_rows(&store, BoxKind::InboxEvents, settled(4)).await;
    running.shutdown().await;
    assert_eq!(calls.of("a"), vec![0, 1, 2]);
    assert_eq!(calls.of("pong"), vec![9]);

    let replay = of_type(Ping::TYPE);
    assert_eq!(store.count_outbox_replay(&replay).await.expect("count"), 3);
    let woken = store.wakers().subscribe(BoxKind::OutboxEvents);
    assert_eq!(store.replay_outbox(&replay).await.expect("replay"), 3);
    assert!(
        woken.has_changed().expect("waker alive"),
        "the outbox was woken"
    );
    for row in rows(&store, BoxKind::OutboxEvents).await {
        let replayed = ids.contains(&row.message.record.id);
        let shown = store.show(row.message.record.id).await.expect("show");
        let view = &shown[0];
        if replayed {
            assert_eq!(view.message.status, MessageStatus::Pending);
            assert_eq!(view.completed_at, None);
            assert_eq!((view.message.retry_count, view.message.takeovers), (0, 0));
            assert_eq!((view.locked_by.as_deref(), view.locked_until), (None, None));
            assert!(view.next_attempt_at.is_some_and(|t| t <= Utc::now()));
            assert_eq!(view.resubmitted_count, 1);
            assert!(view.resubmitted_at.is_some());
        } else {
            assert_eq!(view.message.status, MessageStatus::Completed, "other type");
            assert_eq!(view.resubmitted_count, 0);
        }
    }
    assert_eq!(store.count_outbox_replay(&replay).await.expect("count"), 0);

    let (_bandeja, running) = start(&store, fast_config(), &["a"], &calls).await;
    wait_rows(&store, BoxKind::OutboxEvents, settled(4)).await;
    let mut absorbed = eventually(WAIT, || async {
        let inbox = inbox(&store).await;
        ids.iter()
            .all(|id| {
                inbox
                    .get(&(*id, "a".to_owned()))
                    .is_some_and(|(d, _)| *d == 2)
            })
            .then_some(inbox)
    })
    .await
    .expect("every replayed inbox row delivered twice");
    running.shutdown().await;
    let pong = absorbed.remove(&(other.id, "pong".to_owned()));
    assert_eq!(pong, Some((1, MessageStatus::Completed)), "not replayed");
    let expected: BTreeMap<_, _> = ids
        .iter()
        .map(|id| ((*id, "a".to_owned()), (2, MessageStatus::Completed)))
        .collect();
    assert_eq!(
        absorbed, expected,
        "one row per (id, a), COMPLETED, not re-run"
    );
    assert_eq!(calls.of("a"), vec![0, 1, 2], "the handler never ran again");
    assert_eq!(calls.of("pong"), vec![9]);
}

/// Backfill: events emitted while only `audit` existed; a runtime that also runs `billing`
/// and an outbox replay: `billing` handles each event exactly once, `audit` none again.
pub async fn outbox_replay_backfills_a_new_subscriber<S: Admin>(store: S) {
    const N: u64 = 6;
    let old = Calls::default();
    let (bandeja, running) = start(&store, fast_config(), &["audit"], &old).await;
    emit(&bandeja, 0..N).await;
    wait_rows(&store, BoxKind::InboxEvents, settled(6)).await;
    wait_rows(&store, BoxKind::OutboxEvents, settled(6)).await;
    running.shutdown().await;
    assert!(old.of("billing").is_empty());
    assert_eq!(old.of("audit"), (0..N).collect::<Vec<_>>());

    let new = Calls::default();
    let (bandeja, running) = start(&store, fast_config(), &["audit", "billing"], &new).await;
    let replayed = bandeja
        .store()
        .replay_outbox(&of_type(Ping::TYPE))
        .await
        .expect("replay");
    assert_eq!(replayed, N);
    eventually(WAIT, || async {
        (new.of("billing").len() == 6).then_some(())
    })
    .await
    .expect("billing handled the backlog");
    wait_rows(&store, BoxKind::InboxEvents, settled(12)).await;
    wait_rows(&store, BoxKind::OutboxEvents, settled(6)).await;
    running.shutdown().await;
    assert_eq!(new.of("billing"), (0..N).collect::<Vec<_>>(), "each once");
    assert!(new.of("audit").is_empty(), "audit handles none again");
    let inbox = inbox(&store).await;
    assert!(inbox
        .iter()
        .all(|((_, s), (d, _))| *d == if s == "audit" { 2 } else { 1 }));
}

/// `archive` mode keeps no COMPLETED row in the outbox: replay moves the archived rows
/// back into the box (PENDING, same id and `seq`, resubmission recorded) and out of the
/// archive; relayed again, they are archived again and the inbox absorbs them.
pub async fn outbox_replay_moves_archived_rows_back_into_the_box<S: Admin>(store: S) {
    let mut config = fast_config();
    config.events_outbox.completion_mode = CompletionMode::Archive;
    let calls = Calls::default();
    let (bandeja, running) = start(&store, config.clone(), &["a"], &calls).await;
    let ids = emit(&bandeja, 0..2).await;
    wait_rows(&store, BoxKind::InboxEvents, settled(2)).await;
    wait_rows(&store, BoxKind::OutboxEvents, |rows| rows.is_empty()).await;
    running.shutdown().await;
    let archiving = bandeja.store();
    let archived = archiving
        .archived_rows(BoxKind::OutboxEvents)
        .await
        .expect("archive");
    assert_eq!(archived.len(), 2);

    let replay = OutboxReplay::new(MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        id: Some(ids[1]),
        ..Default::default()
    });
    assert_eq!(
        archiving.count_outbox_replay(&replay).await.expect("count"),
        1
    );
    assert_eq!(archiving.replay_outbox(&replay).await.expect("replay"), 1);
    let back = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(back.len(), 1);
    let original = archived
        .iter()
        .find(|r| r.message.record.id == ids[1])
        .expect("archived");
    assert_eq!(back[0].message.record, original.message.record);
    assert_eq!(back[0].message.seq, original.message.seq, "the same seq");
    assert_eq!(back[0].message.status, MessageStatus::Pending);
    assert_eq!(back[0].completed_at, None);
    let shown = store.show(ids[1]).await.expect("show");
    assert_eq!(shown[0].resubmitted_count, 1);
    let left = archiving
        .archived_rows(BoxKind::OutboxEvents)
        .await
        .expect("archive");
    assert_eq!(
        left.iter().map(|r| r.message.record.id).collect::<Vec<_>>(),
        vec![ids[0]],
        "moved, not copied"
    );
    assert_eq!(
        archiving.count_outbox_replay(&replay).await.expect("count"),
        0
    );

    let (_bandeja, running) = start(&store, config, &["a"], &calls).await;
    wait_rows(&store, BoxKind::OutboxEvents, |rows| rows.is_empty()).await;
    eventually(WAIT, || async {
        let inbox = inbox(&store).await;
        (inbox.get(&(ids[1], "a".to_owned())) == Some(&(2, MessageStatus::Completed))).then_some(())
    })
    .await
    .expect("the inbox absorbed the replayed message");
    running.shutdown().await;
    assert_eq!(calls.of("a"), vec![0, 1], "not handled again");
    let rearchived = archiving
        .archived_rows(BoxKind::OutboxEvents)
        .await
        .expect("archive");
    assert_eq!(rearchived.len(), 2, "archived again once sent");
}

/// What an outbox replay refuses, with the reason and nothing changed: no narrowing
/// without `all`, a subscriber, an inbox, another status, and a box in `delete` mode.
pub async fn outbox_replay_refuses_what_it_cannot_serve<S: Admin>(store: S) {
    let calls = Calls::default();
    let (bandeja, running) = start(&store, fast_config(), &["a"], &calls).await;
    emit(&bandeja, 0..2).await;
    wait_rows(&store, BoxKind::OutboxEvents, settled(2)).await;
    running.shutdown().await;
    let refusal = |err: crate::error::StoreError| {
        ReplayRefused::of(&err)
            .cloned()
            .unwrap_or_else(|| panic!("not a refusal: {err}"))
    };
    let bare = OutboxReplay::default();
    let err = store.replay_outbox(&bare).await.expect_err("no filter");
    assert_eq!(refusal(err), ReplayRefused::NotNarrowed);
    let err = store
        .count_outbox_replay(&bare)
        .await
        .expect_err("no filter");
    assert_eq!(refusal(err), ReplayRefused::NotNarrowed);
    let subscriber = OutboxReplay::everything(MessageFilter {
        subscriber: Some("a".into()),
        ..Default::default()
    });
    let err = store
        .replay_outbox(&subscriber)
        .await
        .expect_err("subscriber");
    assert_eq!(refusal(err), ReplayRefused::Subscriber);
    let inbox = OutboxReplay::everything(MessageFilter {
        box_kind: Some(BoxKind::InboxEvents),
        ..Default::default()
    });
    let err = store.replay_outbox(&inbox).await.expect_err("inbox");
    assert_eq!(refusal(err), ReplayRefused::Inbox(BoxKind::InboxEvents));
    let failed = OutboxReplay::everything(MessageFilter {
        status: Some(MessageStatus::Failed),
        ..Default::default()
    });
    let err = store.replay_outbox(&failed).await.expect_err("failed");
    assert_eq!(refusal(err), ReplayRefused::Status(MessageStatus::Failed));

    let deleting = store
        .with_completion(
            CompletionModes::default().with(BoxKind::OutboxEvents, CompletionMode::Delete),
        )
        .expect("delete mode");
    let err = deleting
        .replay_outbox(&of_type(Ping::TYPE))
        .await
        .expect_err("delete mode");
    let reason = refusal(err);
    assert_eq!(reason, ReplayRefused::DeleteMode(BoxKind::OutboxEvents));
    assert!(reason.to_string().contains("outbox_events"), "{reason}");
    let commands_only = OutboxReplay::new(MessageFilter {
        box_kind: Some(BoxKind::OutboxCommands),
        message_type: Some(Ping::TYPE.into()),
        ..Default::default()
    });
    assert_eq!(
        deleting
            .replay_outbox(&commands_only)
            .await
            .expect("other box"),
        0
    );
    let outbox = MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        ..Default::default()
    };
    let views = store.list(&outbox, Page::default()).await.expect("list");
    assert_eq!(views.len(), 2);
    assert!(
        views
            .iter()
            .all(|v| v.message.status == MessageStatus::Completed && v.resubmitted_count == 0),
        "nothing changed"
    );

    let everything = OutboxReplay::everything(MessageFilter::default());
    assert_eq!(
        store.count_outbox_replay(&everything).await.expect("count"),
        2
    );
}

/// The time window bounds `created_at` (`since` inclusive, `until` exclusive), the id
/// picks one message, a tenant others do not have matches nothing.
pub async fn outbox_replay_chooses_by_time_window_id_and_tenant<S: Admin>(store: S) {
    let calls = Calls::default();
    let (bandeja, running) = start(&store, fast_config(), &["a"], &calls).await;
    let early = emit(&bandeja, 0..2).await;
    wait_rows(&store, BoxKind::OutboxEvents, settled(2)).await;
    let first = store.show(early[1]).await.expect("show")[0].created_at;
    // The next rows must be created in a later millisecond than `first`.
    eventually(WAIT, || async {
        (Utc::now() > first + chrono::Duration::milliseconds(5)).then_some(())
    })
    .await
    .expect("the clock moves");
    let late = emit(&bandeja, 2..5).await;
    wait_rows(&store, BoxKind::OutboxEvents, settled(5)).await;
    running.shutdown().await;
    let cut = store.show(late[0]).await.expect("show")[0].created_at;
    let window = |since, until| {
        OutboxReplay::new(MessageFilter {
            since,
            until,
            ..Default::default()
        })
    };
    let count = |replay: OutboxReplay| {
        let store = store.clone();
        async move { store.count_outbox_replay(&replay).await.expect("count") }
    };
    assert_eq!(
        count(window(Some(cut), None)).await,
        3,
        "since is inclusive"
    );
    assert_eq!(
        count(window(None, Some(cut))).await,
        2,
        "until is exclusive"
    );
    let tomorrow = Utc::now() + chrono::Duration::days(1);
    assert_eq!(count(window(Some(tomorrow), None)).await, 0);
    let other_tenant = OutboxReplay::new(MessageFilter {
        tenant: Some("nobody".into()),
        ..Default::default()
    });
    assert_eq!(count(other_tenant).await, 0);
    let one = OutboxReplay::new(MessageFilter {
        id: Some(late[2]),
        ..Default::default()
    });
    assert_eq!(store.replay_outbox(&one).await.expect("replay"), 1);
    assert_eq!(
        store
            .replay_outbox(&window(None, Some(cut)))
            .await
            .expect("replay"),
        2
    );
    let pending: Vec<MessageId> = rows(&store, BoxKind::OutboxEvents)
        .await
        .into_iter()
        .filter(|r| r.message.status == MessageStatus::Pending)
        .map(|r| r.message.record.id)
        .collect();
    assert_eq!(pending, vec![early[0], early[1], late[2]]);
}

/// Claims every PENDING row of the events outbox and completes it.
async fn complete_all<S: Store>(store: &S) {
    let request = crate::store::ClaimRequest {
        ordered: false,
        ..super::super::request("w", 5000)
    };
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request)
        .await
        .expect("claim");
    let outcomes: Vec<Outcome> = claimed
        .iter()
        .map(|m| Outcome {
            id: m.record.id,
            subscriber: None,
            resolution: Resolution::Completed,
        })
        .collect();
    store
        .resolve(BoxKind::OutboxEvents, "w", &outcomes)
        .await
        .expect("resolve");
}

/// More rows than one batch: every row is sent again exactly once (each resubmitted once
/// per replay), from the box and from its archive.
pub async fn outbox_replay_runs_in_batches_and_takes_each_row_once<S: Admin>(store: S) {
    const N: usize = 2_345;
    let records: Vec<_> = (0..N as u64)
        .map(|n| super::super::ping(n, &format!("k{n}")))
        .collect();
    super::super::emit(&store, &records).await;
    complete_all(&store).await;
    let replay = of_type(Ping::TYPE);
    assert_eq!(
        store.count_outbox_replay(&replay).await.expect("count"),
        N as u64
    );
    assert_eq!(
        store.replay_outbox(&replay).await.expect("replay"),
        N as u64
    );
    let resubmitted = |times: u32| {
        let store = store.clone();
        async move {
            let all = MessageFilter {
                box_kind: Some(BoxKind::OutboxEvents),
                ..Default::default()
            };
            let page = Page {
                limit: N,
                before_seq: None,
            };
            let views = store.list(&all, page).await.expect("list");
            assert_eq!(views.len(), N);
            assert!(views.iter().all(
                |v| v.message.status == MessageStatus::Pending && v.resubmitted_count == times
            ));
        }
    };
    resubmitted(1).await;

    complete_all(&store).await;
    let later = Utc::now() + chrono::Duration::hours(1);
    let archived = store
        .archive(BoxKind::OutboxEvents, later)
        .await
        .expect("archive");
    assert_eq!(archived, N as u64);
    assert_eq!(
        store.count_outbox_replay(&replay).await.expect("count"),
        N as u64
    );
    assert_eq!(
        store.replay_outbox(&replay).await.expect("replay"),
        N as u64
    );
    resubmitted(2).await;
    let left = store
        .archived_rows(BoxKind::OutboxEvents)
        .await
        .expect("archive");
    assert!(left.is_empty(), "{} rows left in the archive", left.len());
}
