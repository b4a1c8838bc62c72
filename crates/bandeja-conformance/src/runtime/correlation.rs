//! Correlation ids: the first message of a flow gets its own id as correlation id when none
//! is given, and what handlers emit from it carries the same one, so one filter lists the
//! whole flow across boxes.

use bandeja_core::admin::{Admin, MessageFilter, Page};
use bandeja_core::envelope::{Event, Payload};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Inspect;

use super::recorder::{Behaviour, Recorder};
use super::{all, wait_rows};
use crate::fixtures::{fast_config, Ping, Pong};

/// Two flows started without a correlation id: each message's correlation id is the id of
/// the message that started its flow, in the outbox and inbox rows of the first message and
/// of the event its handler emitted; listing by one flow's id finds its four rows only.
pub async fn a_flow_started_without_a_correlation_id_is_listed_whole_by_its_first_id<
    S: Inspect + Admin,
>(
    store: S,
) {
    let mut pinger = Recorder::new(Behaviour::Succeed);
    pinger.emit_pong = true;
    let ponger = Recorder::new(Behaviour::Succeed);
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("pinger", pinger)
        .on_event::<Pong, _>("ponger", ponger)
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    let first = Event::new("Ping", "a", Ping { n: 1 });
    let other = Event::new("Ping", "b", Ping { n: 2 });
    bandeja.emit(&first).await.expect("emit");
    bandeja.emit(&other).await.expect("emit");
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 4),
    )
    .await;
    running.shutdown().await;

    let flow = first.id.to_string();
    let found = store
        .list(
            &MessageFilter {
                correlation_id: Some(flow.clone()),
                ..MessageFilter::default()
            },
            Page::default(),
        )
        .await
        .expect("list the flow");
    let mut seen: Vec<(BoxKind, &str)> = found
        .iter()
        .map(|v| (v.message.box_kind, v.message.record.message_type.as_str()))
        .collect();
    seen.sort_by_key(|(b, t)| (b.table(), *t));
    let mut want = vec![
        (BoxKind::OutboxEvents, Ping::TYPE),
        (BoxKind::OutboxEvents, Pong::TYPE),
        (BoxKind::InboxEvents, Ping::TYPE),
        (BoxKind::InboxEvents, Pong::TYPE),
    ];
    want.sort_by_key(|(b, t)| (b.table(), *t));
    assert_eq!(seen, want, "the flow of {flow}: both messages, both boxes");
    let pong = found
        .iter()
        .find(|v| v.message.record.message_type == Pong::TYPE)
        .expect("the emitted event");
    assert_eq!(pong.message.record.headers.causation_id, Some(first.id));
    assert!(
        found
            .iter()
            .all(|v| v.message.record.headers.correlation_id.as_deref() == Some(flow.as_str())),
        "one correlation id for the whole flow"
    );
}
