//! Which rows an outbox replay takes: refusals of what it cannot serve, the choice by time
//! window, id and tenant, batches that take each row once.

use chrono::Utc;

use bandeja_core::admin::{Admin, MessageFilter, OutboxReplay, Page, ReplayRefused};
use bandeja_core::config::{CompletionMode, CompletionModes};
use bandeja_core::envelope::{MessageId, Payload};
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;
use bandeja_core::testing::eventually;

use super::{complete_all, emit, of_type, settled, start, Calls, WAIT};
use crate::fixtures::{fast_config, Ping};
use crate::runtime::wait_rows;
use crate::store::rows;

/// What an outbox replay refuses, with the reason and nothing changed: no narrowing
/// without `all`, a subscriber, an inbox, another status, and a box in `delete` mode.
pub async fn outbox_replay_refuses_what_it_cannot_serve<S: Admin>(store: S) {
    let calls = Calls::default();
    let (bandeja, running) = start(&store, fast_config(), &["a"], &calls).await;
    emit(&bandeja, 0..2).await;
    wait_rows(&store, BoxKind::OutboxEvents, settled(2)).await;
    running.shutdown().await;
    let refusal = |err: bandeja_core::error::StoreError| {
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

/// More rows than one batch: every row is sent again exactly once (each resubmitted once
/// per replay), from the box and from its archive.
pub async fn outbox_replay_runs_in_batches_and_takes_each_row_once<S: Admin>(store: S) {
    const N: usize = 2_345;
    let records: Vec<_> = (0..N as u64)
        .map(|n| crate::store::ping(n, &format!("k{n}")))
        .collect();
    crate::store::emit(&store, &records).await;
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
                after_seq: None,
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
