//! The correlation id filter in the `Admin` suite: exactly the rows whose headers carry
//! the id, in every box and in the archives; the value is bound, never spliced into SQL.

use bandeja_core::admin::{Admin, Discard, MessageFilter};
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Resolution;

use super::{claim_all, ids, list, outcome, record, ACME};
use crate::fixtures::receive_events;
use crate::store::emit;

fn correlated(id: &str) -> MessageFilter {
    MessageFilter {
        correlation_id: Some(id.into()),
        ..Default::default()
    }
}

/// A correlation id finds the outbox and inbox rows of its messages and no other; an id no
/// message carries, or one shaped like SQL, finds nothing; the archives answer the same
/// filter.
pub async fn a_correlation_id_finds_exactly_its_rows<S: Admin>(store: S) {
    let mut order = record(1, ACME);
    order.headers.correlation_id = Some("req-42".into());
    let mut payment = record(2, ACME);
    payment.headers.correlation_id = Some("req-42".into());
    let mut other = record(3, ACME);
    other.headers.correlation_id = Some("req-7".into());
    let plain = record(4, ACME);
    emit(
        &store,
        &[order.clone(), payment.clone(), other.clone(), plain.clone()],
    )
    .await;
    let subscribers = ["billing".to_owned()];
    receive_events(&store, [&order, &other], &subscribers).await;

    let found = list(&store, correlated("req-42")).await;
    let mut seen: Vec<_> = found
        .iter()
        .map(|v| (v.message.box_kind, v.message.record.id))
        .collect();
    seen.sort_by_key(|(b, id)| (b.table(), *id));
    let mut expected = vec![
        (BoxKind::InboxEvents, order.id),
        (BoxKind::OutboxEvents, order.id),
        (BoxKind::OutboxEvents, payment.id),
    ];
    expected.sort_by_key(|(b, id)| (b.table(), *id));
    assert_eq!(seen, expected);
    assert_eq!(store.count(&correlated("req-42")).await.expect("count"), 3);
    assert_eq!(ids(&list(&store, correlated("req-7")).await).len(), 2);
    for nothing in ["req-4", "req-42' OR '1'='1", ""] {
        assert!(
            list(&store, correlated(nothing)).await.is_empty(),
            "`{nothing}` matches no row"
        );
    }

    assert_eq!(claim_all(&store, BoxKind::OutboxEvents).await, 4);
    let failed = Resolution::Failed {
        retry_count: 0,
        error: "poison".into(),
    };
    store
        .resolve(
            BoxKind::OutboxEvents,
            "w",
            &[
                outcome(payment.id, None, failed.clone()),
                outcome(other.id, None, failed),
                outcome(order.id, None, Resolution::Release),
                outcome(plain.id, None, Resolution::Release),
            ],
        )
        .await
        .expect("resolve");
    let discard = Discard {
        by: "alice".into(),
        reason: "poison".into(),
    };
    assert_eq!(
        store
            .discard(&correlated("req-42"), &discard)
            .await
            .expect("discard"),
        1,
        "only the FAILED row of that request"
    );
    let archived = list(
        &store,
        MessageFilter {
            archived: true,
            ..correlated("req-42")
        },
    )
    .await;
    assert_eq!(ids(&archived), vec![payment.id]);
    assert_eq!(archived[0].message.status, MessageStatus::Failed);
}
