//! The process's registration in the subscription tables: written at start (before any
//! worker runs), refreshed every [`heartbeat_every`], removed at shutdown. A failed
//! refresh is logged and tried again at the next beat; the process keeps working.

use std::sync::Arc;

use tokio::sync::watch;

use crate::error::StoreError;
use crate::runtime::Shared;
use crate::store::Store;
use crate::subscriptions::{heartbeat_every, Registration};

/// Registers (or refreshes) this process and its subscriptions.
pub(crate) async fn register<S: Store>(shared: &Shared<S>) -> Result<(), StoreError> {
    let host = host_name();
    shared
        .store
        .register(&Registration {
            process: &shared.process,
            service: shared.service(),
            host: &host,
            pid: std::process::id(),
            subscriptions: &shared.subscriptions,
        })
        .await
}

/// Refreshes the registration until `stop`, then removes the process's rows.
pub(crate) async fn run<S: Store>(shared: Arc<Shared<S>>, mut stop: watch::Receiver<bool>) {
    let every = heartbeat_every(shared.config.stuck_threshold);
    while super::pause(&mut stop, every).await {
        if let Err(error) = register(&shared).await {
            tracing::warn!(%error, process = %shared.process, "refreshing the subscriptions failed: trying again at the next heartbeat");
        }
    }
    if let Err(error) = shared.store.unregister(&shared.process).await {
        tracing::debug!(%error, process = %shared.process, "unregistering the process failed: its rows stop counting as live three heartbeats from now");
    }
}

/// The host name the process runs on (`HOSTNAME`, else `localhost`).
fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}
