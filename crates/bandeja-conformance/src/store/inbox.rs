//! The inbox side of a store: dedup by `(id, subscriber)` counting deliveries, and the
//! in-process transfer from the outbox into one inbox row per subscriber.

use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Delivery, Inspect, Resolution};

use super::{emit, outcome, ping, request, rows};

/// A second delivery of `(id, subscriber)` inserts nothing and counts the delivery.
pub async fn inbox_dedup_counts_deliveries<S: Inspect>(store: S) {
    let record = ping(1, "a");
    let subscribers = vec!["inventory".to_owned(), "notification".to_owned()];
    let delivery = Delivery {
        record: &record,
        subscribers: &subscribers,
    };
    let first = store
        .receive(MessageKind::Event, &[delivery])
        .await
        .expect("receive");
    assert_eq!((first.inserted, first.duplicates), (2, 0));
    let only_one = ["inventory".to_owned()];
    let again = store
        .receive(
            MessageKind::Event,
            &[
                Delivery {
                    record: &record,
                    subscribers: &only_one,
                },
                delivery,
            ],
        )
        .await
        .expect("receive");
    assert_eq!((again.inserted, again.duplicates), (0, 3));
    let rows = rows(&store, BoxKind::InboxEvents).await;
    assert_eq!(rows.len(), 2);
    let counts: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.message.subscriber.clone().unwrap_or_default(),
                r.message.delivery_count,
            )
        })
        .collect();
    assert!(counts.contains(&("inventory".into(), 3)), "{counts:?}");
    assert!(counts.contains(&("notification".into(), 2)), "{counts:?}");
    assert!(rows
        .iter()
        .all(|r| r.message.status == MessageStatus::Pending));
}

/// The in-process transfer: one inbox row per subscriber (in the inbox tenant), outbox COMPLETED.
pub async fn transfer_moves_outbox_rows_into_the_inbox_per_subscriber<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a"), ping(2, "b")]).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    let subscribers = vec!["inventory".to_owned(), "notification".to_owned()];
    let deliveries = [Delivery {
        record: &claimed[0].record,
        subscribers: &subscribers,
    }];
    let outcomes = [
        outcome(&claimed[0], Resolution::Completed),
        outcome(
            &claimed[1],
            Resolution::Failed {
                retry_count: 0,
                error: "no handler".into(),
            },
        ),
    ];
    let report = store
        .transfer(MessageKind::Event, "w", &deliveries, &outcomes)
        .await
        .expect("transfer");
    assert_eq!(report.inserted, 2);
    let outbox = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(outbox[0].message.status, MessageStatus::Completed);
    assert_eq!(outbox[1].message.status, MessageStatus::Failed);
    let inbox = rows(&store, BoxKind::InboxEvents).await;
    assert_eq!(inbox.len(), 2);
    assert!(inbox.iter().all(
        |r| r.message.record == claimed[0].record && r.message.status == MessageStatus::Pending
    ));
    assert!(inbox.iter().all(|r| r.message.delivery_count == 1));
}
