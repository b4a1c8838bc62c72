//! The shared context of a running process: what every worker, stage and background task
//! of one [`Bandeja`](crate::Bandeja) reads — the store, the configuration, the registry
//! of subscribers, the transport, this process's identity and subscriptions, and the
//! lanes' shared state.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::config::Config;
use crate::record::MessageKind;
use crate::registry::Registry;
use crate::store::Store;
use crate::transport::routing::Routing;
use crate::transport::Transport;

/// What the workers share.
pub(crate) struct Shared<S: Store> {
    pub(crate) store: S,
    pub(crate) config: Config,
    pub(crate) registry: Arc<Registry<S>>,
    pub(crate) worker_id: String,
    pub(crate) transport: Option<Arc<dyn Transport>>,
    pub(crate) handler_concurrency: usize,
    pub(crate) claims: std::sync::atomic::AtomicU64,
    /// Random per runtime: two processes given the same worker id still issue distinct
    /// claim tokens.
    pub(crate) instance: u32,
    /// This runtime in the subscription tables: `<worker id>#<instance>`.
    pub(crate) process: String,
    /// The subscriptions this process runs (registered at start, refreshed by heartbeat).
    pub(crate) subscriptions: Vec<crate::subscriptions::Subscription>,
    /// Whether this process's subscriptions are registered in the store: no worker cycle
    /// and no reception runs before (a relay or a reception would otherwise route without
    /// them, and FAIL or reject a message of a type only this process handles).
    pub(crate) registered: Arc<std::sync::atomic::AtomicBool>,
    /// The inbox rows this process claims, of events and of commands (its own
    /// subscriptions, plus the reception's rejected rows).
    pub(crate) claimable: [Vec<crate::subscriptions::Claimable>; 2],
    /// With a broker transport: this service's name and command topics.
    pub(crate) routing: Option<std::sync::Arc<Routing>>,
    /// The largest payload an emission of this runtime accepts.
    pub(crate) max_payload_bytes: usize,
    /// The measured handler times of the inbox subscribers (which run batched).
    pub(crate) pace: crate::pace::Pace,
    /// Transient conflicts per row, tried again for free up to a bound.
    pub(crate) conflicts: crate::conflicts::Conflicts,
    /// The handler permits of each inbox, shared by all its cycles.
    pub(crate) permits: crate::stragglers::Permits,
}

impl<S: Store> Shared<S> {
    /// The inbox rows of `kind` this process claims.
    pub(crate) fn claimable(&self, kind: MessageKind) -> &[crate::subscriptions::Claimable] {
        match kind {
            MessageKind::Event => &self.claimable[0],
            MessageKind::Command => &self.claimable[1],
        }
    }

    /// This service's name (`""` without one: the in-process transport).
    pub(crate) fn service(&self) -> &str {
        self.routing.as_deref().map_or("", Routing::service)
    }

    /// A lock token unique to one claim (`<worker id>#<instance>.<n>`), so that no two
    /// claims — of one process or of two given the same worker id — can complete each
    /// other's rows.
    pub(crate) fn claim_token(&self) -> String {
        let n = self
            .claims
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}#{:08x}.{n}", self.worker_id, self.instance)
    }
}

impl<S: Store> Shared<S> {
    /// Waits until this process's subscriptions are registered; `false` if `stop` came
    /// first.
    pub(crate) async fn registered(&self, stop: &mut watch::Receiver<bool>) -> bool {
        while !self.registered.load(Ordering::Acquire) {
            tokio::select! {
                biased;
                () = stopped(stop) => return false,
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
        true
    }
}

/// Resolves when shutdown has been requested.
pub(crate) async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}
