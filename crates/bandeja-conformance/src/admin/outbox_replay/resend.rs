//! What an outbox replay sends again: completed rows (absorbed by the inboxes that had
//! them), a new subscriber's backfill, archived rows moved back into the box.

use std::collections::BTreeMap;

use chrono::Utc;

use bandeja_core::admin::{Admin, MessageFilter, OutboxReplay};
use bandeja_core::config::CompletionMode;
use bandeja_core::envelope::{Event, Payload};
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;
use bandeja_core::testing::eventually;

use super::{emit, inbox, of_type, settled, start, Calls, WAIT};
use crate::fixtures::{fast_config, Ping, Pong};
use crate::runtime::wait_rows;
use crate::store::rows;

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
