//! The process's registration in the subscription tables: written at start (no worker
//! cycle or reception runs before it succeeded: when the database does not answer at
//! start, they wait while it is tried every second), refreshed every [`heartbeat_every`],
//! removed at shutdown. A failed refresh is logged and tried again at the next beat; the
//! process keeps working.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::context::Shared;
use crate::error::StoreError;
use crate::store::Store;
use crate::subscriptions::{heartbeat_every, Registration};

/// Registers (or refreshes) this process and its subscriptions; once that succeeded, the
/// workers and receivers may run.
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
        .await?;
    shared.registered.store(true, Ordering::Release);
    Ok(())
}

/// How soon a registration that failed at start is tried again.
const UNREGISTERED_RETRY: Duration = Duration::from_secs(1);

/// Refreshes the registration until `stop`, then removes the process's rows. Until a first
/// registration succeeded (`registered` false: the database did not answer at start), it
/// tries every [`UNREGISTERED_RETRY`].
pub(crate) async fn run<S: Store>(
    shared: Arc<Shared<S>>,
    mut registered: bool,
    mut stop: watch::Receiver<bool>,
) {
    let every = heartbeat_every(shared.config.stuck_threshold);
    loop {
        let pause = if registered {
            every
        } else {
            every.min(UNREGISTERED_RETRY)
        };
        if !super::pause(&mut stop, pause).await {
            break;
        }
        match register(&shared).await {
            Ok(()) => {
                if !registered {
                    tracing::info!(process = %shared.process, "this process's subscriptions are registered");
                }
                registered = true;
            }
            Err(error) => {
                tracing::warn!(%error, process = %shared.process, "refreshing the subscriptions failed: trying again at the next heartbeat");
            }
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
