//! [`Running`]: the started workers and subscriptions of a [`Bandeja`](crate::Bandeja),
//! how they stop (a graceful shutdown, a future to run until, a signal, or a drop), whether
//! they still run ([`Liveness`]), and [`shutdown_signal`].

mod liveness;

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::transport::Subscription;

pub(crate) use liveness::Tracker;
pub use liveness::{Liveness, StoppedTask, TaskEnd};

/// The running workers (and, with a broker transport, its subscriptions) of a
/// [`Bandeja`](crate::Bandeja), from [`Bandeja::start`](crate::Bandeja::start).
///
/// Keep it for as long as the process should handle messages, then stop it with
/// [`Running::shutdown`]; or hand it the condition to run until: [`Running::run_until`]
/// (any future, e.g. your HTTP server) or [`Running::run_until_signal`] (Ctrl-C or
/// SIGTERM). Dropping it stops the work too, without waiting: the workers are told to stop
/// (each finishes or releases its batch in the background, as in a graceful shutdown, as
/// long as the Tokio runtime lives) and the broker subscriptions are stopped.
#[must_use = "dropping `Running` stops the workers: keep it, or call `run_until_signal`, `run_until` or `shutdown`"]
pub struct Running {
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
    subscriptions: Vec<Box<dyn Subscription>>,
    liveness: Liveness,
}

impl Running {
    /// What [`Bandeja::start`](crate::Bandeja::start) started: the sender that stops the
    /// workers, their tasks, the broker subscriptions and the probe over the tasks.
    pub(super) fn new(
        stop: watch::Sender<bool>,
        tasks: JoinSet<()>,
        subscriptions: Vec<Box<dyn Subscription>>,
        liveness: Liveness,
    ) -> Self {
        Running {
            stop,
            tasks,
            subscriptions,
            liveness,
        }
    }

    /// A probe that tells whether every task of this runtime (each enabled box's worker,
    /// the heartbeat, the maintenance tasks) still runs, and names those that stopped: what
    /// a liveness endpoint asks (`bandeja_http::HttpOptions::liveness`). Cheap; clone it
    /// freely. It stays valid after a shutdown (then nothing runs).
    pub fn liveness(&self) -> Liveness {
        self.liveness.clone()
    }
}

impl Running {
    /// Runs until `until` completes, then shuts down gracefully ([`Self::shutdown`]) and
    /// returns what `until` returned. `until` can be a signal, a timer, or the application
    /// itself — an HTTP server with its own graceful shutdown, say, so the server stops
    /// taking requests first and the workers stop after it:
    ///
    /// ```no_run
    /// # async fn demo(running: bandeja_core::Running) {
    /// running.run_until(bandeja_core::runtime::shutdown_signal()).await;
    /// # }
    /// ```
    pub async fn run_until<F: std::future::IntoFuture>(self, until: F) -> F::Output {
        let output = until.await;
        self.shutdown().await;
        output
    }

    /// Runs until Ctrl-C or (on Unix) SIGTERM ([`shutdown_signal`]), then shuts down
    /// gracefully: what a service's `main` ends with.
    pub async fn run_until_signal(self) {
        self.run_until(shutdown_signal()).await;
    }

    /// Stops claiming, lets each worker finish its batch (or release it back to PENDING
    /// within its `lock-at-most-for`), and waits for the workers to end.
    pub async fn shutdown(mut self) {
        for subscription in self.subscriptions.drain(..) {
            subscription.stop().await;
        }
        let _ = self.stop.send(true);
        while self.tasks.join_next().await.is_some() {}
    }

    /// Like [`Self::shutdown`], but gives up waiting after `limit` (workers still running
    /// are aborted; their rows return to PENDING when their leases expire).
    pub async fn shutdown_within(mut self, limit: Duration) {
        let _ = self.stop.send(true);
        let mut subscriptions = std::mem::take(&mut self.subscriptions);
        let mut tasks = std::mem::take(&mut self.tasks);
        let wait = async {
            for subscription in subscriptions.drain(..) {
                subscription.stop().await;
            }
            while tasks.join_next().await.is_some() {}
        };
        if tokio::time::timeout(limit, wait).await.is_err() {
            tasks.abort_all();
        }
    }
}

impl Drop for Running {
    /// Tells the workers to stop (they finish or release their batches in the background)
    /// and stops the subscriptions, without waiting for either. After [`Running::shutdown`]
    /// there is nothing left to do.
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        // Detached rather than aborted: a worker stops at its next check of the stop
        // signal, with its batch finished or released, instead of in the middle of it.
        self.tasks.detach_all();
        let subscriptions = std::mem::take(&mut self.subscriptions);
        if subscriptions.is_empty() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    for subscription in subscriptions {
                        subscription.stop().await;
                    }
                });
            }
            // No runtime left to stop them on: their connections close with the process.
            Err(_) => drop(subscriptions),
        }
    }
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM: the usual signal to stop a service (what
/// [`Running::run_until_signal`] waits for). A signal that cannot be listened to is logged
/// and never resolves.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C received, shutting down"),
        () = terminate => tracing::info!("SIGTERM received, shutting down"),
    }
}
