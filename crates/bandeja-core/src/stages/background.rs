//! Background tasks a runtime runs beside its workers, added by features that need one
//! (the sagas' sweeper of late replies): each gets the runtime's outbox and its stop signal
//! when the runtime starts.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::watch;

use crate::emission::Outbox;
use crate::store::Store;

/// A task started with the runtime and stopped with it.
pub(crate) trait Background<S: Store>: Send + Sync {
    /// Its name in the runtime's liveness report.
    fn name(&self) -> &'static str;

    /// The task: runs until `stop` turns true.
    fn run(
        self: Arc<Self>,
        outbox: Outbox<S>,
        stop: watch::Receiver<bool>,
    ) -> BoxFuture<'static, ()>;
}
