//! Startup and shutdown of the shop on one database: migrations, workers, HTTP.

use std::time::Duration;

use tokio::net::TcpListener;

use crate::app::{self, AppState};
use crate::{config, db, messaging, ShopDb};

/// A startup failure (the message says what failed).
pub type StartError = Box<dyn std::error::Error + Send + Sync>;

/// How the shop runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Address to listen on (`127.0.0.1:0` picks a free port).
    pub listen: String,
    /// Pause of the notification handler before it writes (the crash demo's window).
    pub notification_delay: Duration,
}

/// Runs the shop on `db` until Ctrl-C or SIGTERM: migrates bandeja's boxes and the shop's
/// tables, starts the workers, serves HTTP, then stops the server and the workers
/// gracefully. Prints `shop listening on http://ADDR` on stdout once it accepts requests.
pub async fn run<D: ShopDb>(db: D, settings: Settings) -> Result<(), StartError> {
    let config = config::bandeja_config(settings.notification_delay)?;
    db.migrate()
        .await
        .map_err(|e| format!("migrating bandeja's boxes: {e}"))?;
    db::migrate(&db)
        .await
        .map_err(|e| format!("migrating the shop's tables: {e}"))?;
    let bandeja = messaging::bandeja(db.clone(), config, settings.notification_delay)?;
    let listener = TcpListener::bind(&settings.listen)
        .await
        .map_err(|e| format!("listening on {}: {e}", settings.listen))?;
    let address = listener.local_addr()?;

    let running = bandeja.start().await?;
    println!("shop listening on http://{address}");
    tracing::info!(%address, notification_delay = ?settings.notification_delay, "shop started");

    let served = axum::serve(listener, app::router(AppState::new(db)))
        .with_graceful_shutdown(shutdown_signal())
        .await;
    tracing::info!("HTTP server stopped; stopping the workers");
    running.shutdown().await;
    tracing::info!("shop stopped");
    Ok(served?)
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
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
