//! The completion conformance suite: completion modes (`update`, `delete`, `archive`) on
//! the four boxes through the real runtime, inbox dedup after a row was deleted or
//! archived, retention and the staleness monitor, with
//! [`completion_conformance_tests!`](crate::completion_conformance_tests). This module holds
//! the helpers of the checks; the checks are in the topic modules below.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_core::config::{CompletionMode, Config, HandlerTransaction};
use bandeja_core::envelope::{Command, Event};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{CommandHandler, EventHandler, HandlerContext};
use bandeja_core::record::{BoxKind, StoredMessage};
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView, Store};
use bandeja_core::tenant::{self, TenantId};
use bandeja_core::testing::eventually;

use crate::fixtures::{fast_config, Archive, Ping};
use crate::store::request;

pub mod modes;
pub mod monitor;
pub mod redelivery;
pub mod retention;

pub(crate) const WAIT: Duration = Duration::from_secs(20);

pub(crate) async fn claim<S: Store>(
    store: &S,
    box_kind: BoxKind,
    limit: usize,
) -> Vec<StoredMessage> {
    store
        .claim(box_kind, &request("w", limit))
        .await
        .expect("claim")
}

/// Counts what it handles.
#[derive(Clone, Default)]
pub(crate) struct Counter(Arc<Mutex<Vec<u64>>>);

impl Counter {
    pub(crate) fn seen(&self) -> Vec<u64> {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub(crate) fn record(&self, n: u64) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(n);
        }
    }
}

impl<S: Store> EventHandler<S, Ping> for Counter {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        self.record(event.payload.n);
        Ok(())
    }
}

impl<S: Store> CommandHandler<S, Archive> for Counter {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        command: Command<Archive>,
    ) -> Result<(), HandlerError> {
        self.record(command.payload.n);
        Ok(())
    }
}

/// `fast_config` with `mode` on every box; the event inbox completes one transaction per
/// message, the command inbox one per batch, so both completion paths run.
pub(crate) fn config_with(mode: CompletionMode) -> Config {
    let mut config = fast_config();
    for group in BoxKind::ALL {
        config.group_mut(group).completion_mode = mode;
    }
    config.events_inbox.handler_transaction = HandlerTransaction::Message;
    config.commands_inbox.handler_transaction = HandlerTransaction::Batch;
    config
}

pub(crate) async fn archived<S: Inspect>(store: &S, box_kind: BoxKind) -> Vec<RowView> {
    store.archived_rows(box_kind).await.expect("archived rows")
}

/// Emits one event and sends one command through `bandeja`'s store, runs until both were
/// handled and no live row is left, and checks that the handler saw each once.
pub(crate) async fn run_one_of_each<S: Inspect>(store: &S, mode: CompletionMode) {
    let counter = Counter::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(config_with(mode))
        .on_event::<Ping, _>("s", counter.clone())
        .on_command::<Archive, _>("archiver", counter.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    bandeja
        .emit(&Event::new("Ping", "k", Ping { n: 1 }))
        .await
        .expect("emit");
    let command = tenant::scope(TenantId::default_tenant(), async {
        Command::to_self("archiver", Archive { n: 2 })
    })
    .await
    .expect("command");
    bandeja.send(&command).await.expect("send");
    let mut seen = eventually(WAIT, || async {
        let seen = counter.seen();
        (seen.len() == 2).then_some(seen)
    })
    .await
    .expect("both handled");
    let settled = |rows: &[RowView]| {
        rows.iter().all(|r| {
            !matches!(
                r.message.status,
                MessageStatus::Pending | MessageStatus::Processing
            )
        })
    };
    for box_kind in BoxKind::ALL {
        crate::runtime::wait_rows(store, box_kind, settled).await;
    }
    running.shutdown().await;
    seen.sort_unstable();
    assert_eq!(seen, vec![1, 2]);
}
