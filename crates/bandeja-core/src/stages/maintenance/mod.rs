//! Background housekeeping the runtime starts beside the workers: the retention purge of
//! old COMPLETED rows ([`retention`]) and the staleness monitor ([`staleness`]). Both run
//! on every process; their statements are idempotent, so several processes on one
//! database only repeat each other's work.

pub(crate) mod heartbeat;
pub(crate) mod retention;
pub(crate) mod staleness;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::context::Shared;
use crate::store::Store;

/// Spawns the retention task of every box with a `retention`, and the staleness monitor
/// when `staleness.enabled`, into `tasks`; they end when `stop` turns `true`.
pub(crate) fn spawn<S: Store>(
    shared: &Arc<Shared<S>>,
    tasks: &mut JoinSet<()>,
    stop: &watch::Receiver<bool>,
) {
    for box_kind in crate::record::BoxKind::ALL {
        if let Some(retention) = shared.config.group(box_kind).retention {
            tasks.spawn(retention::run(
                shared.store.clone(),
                box_kind,
                retention,
                stop.clone(),
            ));
        }
    }
    if shared.config.staleness.enabled {
        tasks.spawn(staleness::run(
            shared.store.clone(),
            shared.config.staleness.clone(),
            stop.clone(),
        ));
    }
}

/// Waits `pause`; `false` when shutdown was requested meanwhile (or already).
pub(crate) async fn pause(stop: &mut watch::Receiver<bool>, pause: Duration) -> bool {
    tokio::select! {
        biased;
        () = crate::worker::stopped(stop) => false,
        () = tokio::time::sleep(pause) => true,
    }
}
