//! Mixed fleets over a broker: the processes of one service run different versions (a
//! rolling deploy). A process that receives a type only a newer process of its service
//! subscribes to stores the row the newer process handles — never acknowledges and drops
//! it, never stores it as rejected.

use bandeja_core::envelope::Event;
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Store};

use super::{emit, rows, stop, wait_rows, Harness, Seen};
use crate::fixtures::{Ping, Pong};

impl<S: Store> EventHandler<S, Pong> for Seen {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Pong>,
    ) -> Result<(), HandlerError> {
        self.push(event.id, "pong".into(), event.payload.n);
        Ok(())
    }
}

/// The new version of service `billing` subscribes to `Ping` and `Pong`, the old one to
/// `Ping` only. With only the old process running, the `Pong`s it receives are stored for
/// the new version's subscriber (waiting, PENDING); once a new process runs, it handles
/// each once. Nothing is FAILED or rejected.
pub async fn a_type_only_a_newer_process_subscribes_to_is_stored_for_it<S: Inspect>(h: Harness<S>) {
    let (orders, billing) = (h.store().await, h.store().await);
    let (old_seen, new_seen) = (Seen::default(), Seen::default());
    let new_version = h.service("billing", &billing, h.transport().await, |b| {
        b.on_event::<Ping, _>("invoice", new_seen.clone())
            .on_event::<Pong, _>("refunds", new_seen.clone())
    });
    // The new version registers its subscriptions, then stops (the deploy is under way).
    stop(new_version.start().await.expect("start the new version")).await;
    let old_version = h.service("billing", &billing, h.transport().await, |b| {
        b.on_event::<Ping, _>("invoice", old_seen.clone())
    });
    let old_running = old_version.start().await.expect("start the old version");
    let producer = h.service("orders", &orders, h.transport().await, |b| b);
    let producing = producer.start().await.expect("start the producer");
    let mut pongs = Vec::new();
    for n in 0..5 {
        let pong = Event::new("Pong", format!("p{n}"), Pong { n });
        pongs.push(pong.id);
        producer.emit(&pong).await.expect("emit a pong");
    }
    let pings = emit(&orders, (0..5).map(|n| (n, format!("k{n}")))).await;
    let inbox = wait_rows(&billing, BoxKind::InboxEvents, "stored", |rows| {
        rows.len() == 10
            && rows
                .iter()
                .filter(|r| r.message.subscriber.as_deref() == Some("invoice"))
                .all(|r| r.message.status == MessageStatus::Completed)
    })
    .await;
    let waiting: Vec<_> = inbox
        .iter()
        .filter(|r| r.message.subscriber.as_deref() == Some("refunds"))
        .collect();
    assert_eq!(waiting.len(), 5, "a row for every pong: {inbox:#?}");
    assert!(
        waiting
            .iter()
            .all(|r| r.message.status == MessageStatus::Pending),
        "they wait for the new version: {waiting:#?}"
    );
    let new_running = new_version
        .start()
        .await
        .expect("start the new version again");
    wait_rows(&billing, BoxKind::InboxEvents, "all handled", |rows| {
        rows.len() == 10
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed)
    })
    .await;
    for running in [old_running, new_running, producing] {
        stop(running).await;
    }
    let mut expected_pongs = pongs;
    expected_pongs.sort();
    let handled_pongs: Vec<_> = {
        let mut ids: Vec<_> = new_seen
            .all()
            .into_iter()
            .filter(|s| s.1 == "pong")
            .map(|s| s.0)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(handled_pongs, expected_pongs, "each pong handled once");
    let mut expected_pings = pings;
    expected_pings.sort();
    assert_eq!(
        old_seen.ids(),
        expected_pings,
        "the old version handled the pings"
    );
    let all = rows(&billing, BoxKind::InboxEvents).await;
    assert!(
        all.iter().all(|r| r.message.subscriber.as_deref()
            != Some(bandeja_core::transport::wire::REJECTED_SUBSCRIBER)),
        "nothing rejected"
    );
}
