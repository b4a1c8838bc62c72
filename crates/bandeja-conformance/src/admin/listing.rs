//! Listing and `show` in the `Admin` suite: every filter field, pages newest first, a
//! message's outbox row with every inbox row.

use chrono::Utc;

use bandeja_core::admin::{Admin, MessageFilter, Page};
use bandeja_core::envelope::MessageId;
use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Delivery, Resolution};

use super::{claim_all, fixture, ids, list, outcome, record, ACME, GLOBEX, PONG};
use crate::store::emit;

/// Each filter field narrows the listing; rows come newest first per box.
pub async fn list_filters_by_every_field<S: Admin>(store: S) {
    let f = fixture(&store).await;
    let all = list(&store, MessageFilter::default()).await;
    assert_eq!(all.len(), 8, "6 outbox rows and 2 inbox rows");
    let outbox: Vec<_> = all
        .iter()
        .filter(|v| v.message.box_kind == BoxKind::OutboxEvents)
        .collect();
    assert!(outbox
        .windows(2)
        .all(|w| w[0].message.seq > w[1].message.seq));
    assert!(all
        .iter()
        .all(|v| v.resubmitted_count == 0 && v.resubmitted_at.is_none()));
    let inbox_row = all
        .iter()
        .find(|v| v.message.box_kind == BoxKind::InboxEvents)
        .expect("inbox row");
    assert!(inbox_row.received_at.is_some());
    assert!(outbox.iter().all(|v| v.received_at.is_none()));

    let by_box = list(
        &store,
        MessageFilter {
            box_kind: Some(BoxKind::InboxEvents),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&by_box), vec![f.received.id, f.received.id]);
    let failed = list(
        &store,
        MessageFilter {
            status: Some(MessageStatus::Failed),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(
        ids(&failed),
        vec![f.g_failed.id, f.a_failed.id, f.received.id]
    );
    assert_eq!(failed[0].message.last_error.as_deref(), Some("no route"));
    let globex = list(
        &store,
        MessageFilter {
            tenant: Some(GLOBEX.into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&globex), vec![f.g_pending.id, f.g_failed.id]);
    let pong = list(
        &store,
        MessageFilter {
            message_type: Some(PONG.into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&pong), vec![f.g_pending.id]);
    let inventory = list(
        &store,
        MessageFilter {
            subscriber: Some("inventory".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(inventory.len(), 1);
    assert_eq!(inventory[0].message.status, MessageStatus::Completed);
    let one = list(
        &store,
        MessageFilter {
            id: Some(f.a_failed.id),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&one), vec![f.a_failed.id]);

    let now = Utc::now();
    let hour = chrono::Duration::hours(1);
    let window = |since, until| MessageFilter {
        since,
        until,
        ..Default::default()
    };
    assert_eq!(list(&store, window(Some(now - hour), None)).await.len(), 8);
    assert_eq!(list(&store, window(Some(now + hour), None)).await.len(), 0);
    assert_eq!(list(&store, window(None, Some(now + hour))).await.len(), 8);
    assert_eq!(list(&store, window(None, Some(now - hour))).await.len(), 0);
    let combined = list(
        &store,
        MessageFilter {
            box_kind: Some(BoxKind::OutboxEvents),
            status: Some(MessageStatus::Pending),
            tenant: Some(ACME.into()),
            ..window(Some(now - hour), Some(now + hour))
        },
    )
    .await;
    assert_eq!(ids(&combined), vec![f.a_pending.id]);
}

/// Pages follow `before_seq` without overlap or gaps; a zero limit lists nothing.
pub async fn list_pages_newest_first_without_overlap<S: Admin>(store: S) {
    let records: Vec<_> = (0..7).map(|n| record(n, ACME)).collect();
    emit(&store, &records).await;
    let filter = MessageFilter {
        box_kind: Some(BoxKind::OutboxEvents),
        ..Default::default()
    };
    let mut seen = Vec::new();
    let mut page = Page {
        limit: 3,
        before_seq: None,
        after_seq: None,
    };
    let mut sizes = Vec::new();
    loop {
        let got = store.list(&filter, page).await.expect("list");
        sizes.push(got.len());
        let Some(last) = got.last() else { break };
        page.before_seq = Some(last.message.seq);
        seen.extend(ids(&got));
    }
    assert_eq!(sizes, vec![3, 3, 1, 0]);
    let newest_first: Vec<_> = records.iter().rev().map(|r| r.id).collect();
    assert_eq!(seen, newest_first);
    let none = store
        .list(
            &filter,
            Page {
                limit: 0,
                before_seq: None,
                after_seq: None,
            },
        )
        .await
        .expect("list");
    assert!(none.is_empty());
}

/// `show` finds a message's outbox row and its inbox rows, with payload and bookkeeping.
pub async fn show_returns_the_outbox_row_and_every_inbox_row<S: Admin>(store: S) {
    let message = record(1, ACME);
    emit(&store, std::slice::from_ref(&message)).await;
    assert_eq!(claim_all(&store, BoxKind::OutboxEvents).await, 1);
    let subscribers = ["notification".to_owned(), "inventory".to_owned()];
    store
        .transfer(
            MessageKind::Event,
            "w",
            &[Delivery {
                record: &message,
                subscribers: &subscribers,
            }],
            &[outcome(message.id, None, Resolution::Completed)],
        )
        .await
        .expect("transfer");
    let shown = store.show(message.id).await.expect("show");
    let places: Vec<_> = shown
        .iter()
        .map(|v| {
            (
                v.message.box_kind,
                v.message.subscriber.clone(),
                v.message.status,
            )
        })
        .collect();
    assert_eq!(
        places,
        vec![
            (BoxKind::OutboxEvents, None, MessageStatus::Completed),
            (
                BoxKind::InboxEvents,
                Some("inventory".into()),
                MessageStatus::Pending
            ),
            (
                BoxKind::InboxEvents,
                Some("notification".into()),
                MessageStatus::Pending
            ),
        ]
    );
    let as_json = |text: &str| serde_json::from_str::<serde_json::Value>(text).expect("json");
    assert!(shown
        .iter()
        .all(|v| as_json(&v.message.record.payload) == as_json(&message.payload)));
    assert!(shown[0].completed_at.is_some());
    assert!(shown.iter().all(|v| v.last_modified_at >= v.created_at));
    assert!(store.show(MessageId::new()).await.expect("show").is_empty());
}
