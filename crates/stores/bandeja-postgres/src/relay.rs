//! The `NOTIFY` relay: one background task per store (shared by its clones) that `LISTEN`s
//! on the schema's channel over a dedicated connection and turns each notification into a
//! wake-up of the box named in its payload.
//!
//! Notifications are best effort: when the connection drops, the task reconnects with
//! backoff and, once back, wakes every box (notifications sent meanwhile are lost). Polling
//! remains the safety net.

use std::time::Duration;

use bandeja_core::wake::Wakers;
use bandeja_core::BoxKind;
use sqlx::postgres::{PgListener, PgPool, PgPoolOptions};
use tokio::task::AbortHandle;

const MIN_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The running relay; dropping it (with the last store clone) stops the task.
pub(crate) struct RelayHandle(AbortHandle);

impl Drop for RelayHandle {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A one-connection pool with the store pool's connect options: the listener holds its
/// connection for good, so it must not take one from the application's pool.
pub(crate) fn listener_pool(pool: &PgPool) -> PgPool {
    PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .max_lifetime(None)
        .idle_timeout(None)
        .acquire_timeout(Duration::from_secs(10))
        .connect_lazy_with(pool.connect_options().as_ref().clone())
}

/// Connects and `LISTEN`s on `channel`.
pub(crate) async fn open(pool: &PgPool, channel: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    Ok(listener)
}

/// Spawns the relay, starting from `listener` if one is already listening.
pub(crate) fn spawn(
    pool: PgPool,
    channel: String,
    wakers: Wakers,
    listener: Option<PgListener>,
) -> RelayHandle {
    RelayHandle(tokio::spawn(run(pool, channel, wakers, listener)).abort_handle())
}

fn wake_all(wakers: &Wakers) {
    for box_kind in BoxKind::ALL {
        wakers.wake(box_kind);
    }
}

async fn run(pool: PgPool, channel: String, wakers: Wakers, mut listener: Option<PgListener>) {
    let mut backoff = MIN_BACKOFF;
    let mut lost = false;
    loop {
        let mut current = match listener.take() {
            Some(listener) => listener,
            None => match open(&pool, &channel).await {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::warn!(%error, %channel, ?backoff,
                        "cannot LISTEN for bandeja notifications; workers fall back to polling");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            },
        };
        if std::mem::take(&mut lost) {
            tracing::info!(%channel, "listening for bandeja notifications again");
            wake_all(&wakers); // anything committed while we were away
        }
        loop {
            match current.try_recv().await {
                Ok(Some(notification)) => {
                    backoff = MIN_BACKOFF;
                    let payload = notification.payload();
                    match BoxKind::ALL.into_iter().find(|b| b.table() == payload) {
                        Some(box_kind) => wakers.wake(box_kind),
                        None => {
                            tracing::debug!(%payload, %channel, "ignoring an unknown notification")
                        }
                    }
                }
                Ok(None) => {
                    // The listener reconnected by itself: notifications may have been missed.
                    tracing::info!(%channel, "the notification connection was re-established");
                    wake_all(&wakers);
                }
                Err(error) => {
                    tracing::warn!(%error, %channel,
                        "lost the notification connection; workers fall back to polling until it is back");
                    lost = true;
                    break;
                }
            }
        }
        drop(current);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
