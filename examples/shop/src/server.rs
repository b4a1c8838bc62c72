//! Startup and shutdown of the shop on one database: migrations, workers, HTTP.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bandeja::nats::{NatsOptions, NatsTransport};
use bandeja::transport::Transport;

use tokio::net::TcpListener;

use crate::app::{self, AppState};
use crate::messaging::Service;
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
    /// Which part of the shop this process runs.
    pub service: Service,
    /// bandeja's configuration file (`--config`, `BANDEJA_CONFIG`), if any.
    pub config: Option<PathBuf>,
    /// NATS JetStream between the services (`None`: the in-process transport).
    pub nats: Option<NatsSettings>,
}

/// Where the services meet on NATS.
#[derive(Debug, Clone)]
pub struct NatsSettings {
    /// The server, e.g. `nats://127.0.0.1:4222`.
    pub url: String,
    /// Stream and subject names start with this (`shop`: stream `SHOP_EVENTS`).
    pub prefix: String,
}

/// Runs the shop on `db` until Ctrl-C or SIGTERM: migrates bandeja's boxes and the shop's
/// tables, starts the workers, serves HTTP, then stops the server and the workers
/// gracefully. Prints `shop listening on http://ADDR` on stdout once it accepts requests.
pub async fn run<D: ShopDb>(db: D, settings: Settings) -> Result<(), StartError> {
    let config = config::bandeja_config(settings.notification_delay, settings.config.as_deref())
        .map_err(|e| e.full_message())?;
    db.migrate()
        .await
        .map_err(|e| format!("migrating bandeja's boxes: {e}"))?;
    db::migrate(&db)
        .await
        .map_err(|e| format!("migrating the shop's tables: {e}"))?;
    let transport: Option<Arc<dyn Transport>> = match &settings.nats {
        Some(nats) => {
            let options = NatsOptions {
                url: nats.url.clone(),
                prefix: nats.prefix.clone(),
                ..NatsOptions::default()
            };
            let transport = NatsTransport::connect(options)
                .await
                .map_err(|e| format!("connecting to NATS at {}: {e}", nats.url))?;
            Some(Arc::new(transport))
        }
        None if settings.service != Service::All => {
            return Err(format!(
                "`--service {}` runs one service of the shop: give the broker the services meet on with `--nats nats://127.0.0.1:4222`",
                settings.service.name()
            )
            .into())
        }
        None => None,
    };
    let bandeja = messaging::bandeja(
        db.clone(),
        config,
        settings.notification_delay,
        settings.service,
        transport,
    )?;
    let listener = TcpListener::bind(&settings.listen)
        .await
        .map_err(|e| format!("listening on {}: {e}", settings.listen))?;
    let address = listener.local_addr()?;

    let running = bandeja.start().await?;
    println!("shop listening on http://{address}");
    tracing::info!(%address, service = settings.service.name(), nats = settings.nats.as_ref().map(|n| n.url.as_str()), notification_delay = ?settings.notification_delay, "shop started");

    // Until Ctrl-C or SIGTERM: the server stops taking requests and finishes those in
    // flight, then the workers stop gracefully.
    let app = app::router(AppState::new(db, bandeja.outbox()), settings.service);
    let served = running
        .run_until(axum::serve(listener, app).with_graceful_shutdown(bandeja::shutdown_signal()))
        .await;
    tracing::info!("shop stopped");
    Ok(served?)
}
