//! The outbox replay checks of the `Admin` suite ([`Admin::replay_outbox`]): through the
//! public runtime API (builder `.on_event`, `start`, `emit`), so they hold whichever way
//! the relay finds the subscribers of a message. This module holds their helpers; the
//! checks are in [`resend`] and [`selection`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_core::admin::{Admin, MessageFilter, OutboxReplay};
use bandeja_core::config::Config;
use bandeja_core::envelope::{Event, MessageId};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::{Bandeja, Running};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Outcome, Resolution, RowView, Store};

use crate::fixtures::{Ping, Pong};
use crate::store::rows;

pub mod resend;
pub mod selection;

pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// Counts handler calls: (subscriber, payload number), in call order.
#[derive(Clone, Default)]
pub(crate) struct Calls(Arc<Mutex<Vec<(String, u64)>>>);

impl Calls {
    pub(crate) fn all(&self) -> Vec<(String, u64)> {
        self.0.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The payload numbers `subscriber` handled, sorted (a number twice: handled twice).
    pub(crate) fn of(&self, subscriber: &str) -> Vec<u64> {
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
pub(crate) async fn start<S: Store>(
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
pub(crate) async fn emit<S: Store>(
    bandeja: &Bandeja<S>,
    range: std::ops::Range<u64>,
) -> Vec<MessageId> {
    let mut ids = Vec::new();
    for n in range {
        let event = Event::new("Ping", format!("k{n}"), Ping { n });
        ids.push(event.id);
        bandeja.emit(&event).await.expect("emit");
    }
    ids
}

pub(crate) fn settled(n: usize) -> impl Fn(&[RowView]) -> bool {
    move |rows| {
        rows.len() == n
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed)
    }
}

pub(crate) fn of_type(message_type: &str) -> OutboxReplay {
    OutboxReplay::new(MessageFilter {
        message_type: Some(message_type.to_owned()),
        ..Default::default()
    })
}

/// `(id, subscriber) -> (delivery_count, status)` of the events inbox.
pub(crate) async fn inbox<S: Admin>(
    store: &S,
) -> BTreeMap<(MessageId, String), (u32, MessageStatus)> {
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

/// Claims every PENDING row of the events outbox and completes it.
pub(crate) async fn complete_all<S: Store>(store: &S) {
    let request = bandeja_core::store::ClaimRequest {
        ordered: false,
        ..crate::store::request("w", 5000)
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
