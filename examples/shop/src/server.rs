//! Startup and shutdown of the shop on one database: migrations, workers, HTTP (the shop's
//! API, and bandeja's admin endpoints under `/admin` or on an address of their own).

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::response::Redirect;
use axum::routing::get;
use axum::Router;
use bandeja::admin::Admin;
use bandeja::kafka::{KafkaOptions, KafkaTransport};
use bandeja::nats::{NatsOptions, NatsTransport};
use bandeja::redis::{RedisOptions, RedisTransport};
use bandeja::transport::Transport;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::app::{self, AppState};
use crate::messaging::{Handlers, Service};
use crate::steps::StepRuns;
use crate::{config, db, messaging, order, ShopDb};

/// A startup failure (the message says what failed).
pub type StartError = Box<dyn std::error::Error + Send + Sync>;

/// How the shop runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Address to listen on (`127.0.0.1:0` picks a free port).
    pub listen: String,
    /// Pause of the notification handler before it writes (the crash demo's window).
    pub notification_delay: Duration,
    /// Pause of the saga step handlers before they write (`SHOP_STEP_DELAY`: the window of
    /// the saga crash tests).
    pub step_delay: Duration,
    /// File the step handlers append a line to per run, outside their transactions
    /// (`SHOP_RUN_LOG`).
    pub run_log: Option<PathBuf>,
    /// Which part of the shop this process runs.
    pub service: Service,
    /// bandeja's configuration file (`--config`, `BANDEJA_CONFIG`), if any.
    pub config: Option<PathBuf>,
    /// The broker between the services (`None`: the in-process transport).
    pub broker: Option<BrokerSettings>,
    /// bandeja's admin endpoints (health, boxes, metrics, dashboard).
    pub admin: AdminSettings,
}

/// Where and how the admin endpoints are served.
#[derive(Clone, Default)]
pub struct AdminSettings {
    /// An address of their own, served at its root (`--admin-listen`, `SHOP_ADMIN_LISTEN`);
    /// `None`: under `/admin` on the shop's address.
    pub listen: Option<String>,
    /// The admin token (`--admin-token`, `SHOP_ADMIN_TOKEN`): admin actions and message
    /// listings need it. `None`: one is generated for the run (printed with the dashboard
    /// URL when the admin endpoints are on a loopback address).
    pub token: Option<String>,
    /// More FAILED rows than this make `/health/ready` DOWN (`--failed-threshold`,
    /// `SHOP_FAILED_THRESHOLD`); `None`: FAILED rows do not change readiness.
    pub failed_threshold: Option<u64>,
}

impl std::fmt::Debug for AdminSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminSettings")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("failed_threshold", &self.failed_threshold)
            .finish()
    }
}

/// The broker the services meet on, and the prefix of the names they meet under.
#[derive(Debug, Clone)]
pub enum BrokerSettings {
    /// NATS JetStream at `url` (e.g. `nats://127.0.0.1:4222`).
    Nats {
        /// The server.
        url: String,
        /// Stream and subject names start with this (`shop`: stream `SHOP_EVENTS`).
        prefix: String,
        /// The partition count every service uses.
        partitions: u16,
    },
    /// Redis Streams at `url` (e.g. `redis://127.0.0.1:6379`).
    Redis {
        /// The server.
        url: String,
        /// Stream names start with this (`shop`: stream `shop.events.p0`).
        prefix: String,
        /// The partition count every service uses.
        partitions: u16,
    },
    /// Kafka with the brokers `servers` (e.g. `127.0.0.1:9092`).
    Kafka {
        /// The bootstrap servers.
        servers: String,
        /// Topic names start with this (`shop`: topic `shop.events`).
        prefix: String,
        /// The partition count every service uses (and the topics have).
        partitions: u16,
        /// Whether the transport creates its topics with `CreateTopics`; off, the brokers
        /// create a missing one when its metadata is asked for (as librdkafka's mock
        /// cluster does, with its own partition count).
        create_topics: bool,
    },
}

impl BrokerSettings {
    /// The broker's name and address, for logs and errors.
    pub fn describe(&self) -> String {
        match self {
            BrokerSettings::Nats { url, .. } => format!("NATS at {url}"),
            BrokerSettings::Redis { url, .. } => format!("Redis at {url}"),
            BrokerSettings::Kafka { servers, .. } => format!("Kafka at {servers}"),
        }
    }

    /// Connects the transport.
    async fn connect(&self) -> Result<Arc<dyn Transport>, bandeja::transport::TransportError> {
        Ok(match self {
            BrokerSettings::Nats {
                url,
                prefix,
                partitions,
            } => {
                let options = NatsOptions {
                    url: url.clone(),
                    prefix: prefix.clone(),
                    partitions: *partitions,
                    ..NatsOptions::default()
                };
                Arc::new(NatsTransport::connect(options).await?)
            }
            BrokerSettings::Redis {
                url,
                prefix,
                partitions,
            } => {
                let options = RedisOptions::new(url.clone())
                    .prefix(prefix.clone())
                    .partitions(*partitions);
                Arc::new(RedisTransport::connect(options).await?)
            }
            BrokerSettings::Kafka {
                servers,
                prefix,
                partitions,
                create_topics,
            } => {
                let options = KafkaOptions::new(servers.clone())
                    .prefix(prefix.clone())
                    .partitions(*partitions)
                    .create_topics(*create_topics)
                    .broker_creates_topics(!*create_topics);
                Arc::new(KafkaTransport::connect(options).await?)
            }
        })
    }
}

/// Runs the shop on `db` until Ctrl-C or SIGTERM: migrates bandeja's boxes and the shop's
/// tables, starts the workers, serves HTTP, then stops the server and the workers
/// gracefully. Prints `shop listening on http://ADDR` on stdout once it accepts requests,
/// then `shop admin on http://ADDR/admin` (or the admin address).
pub async fn run<D: ShopDb + Admin>(db: D, settings: Settings) -> Result<(), StartError> {
    let config = config::bandeja_config(
        settings.notification_delay,
        settings.step_delay,
        settings.config.as_deref(),
    )
    .map_err(|e| e.full_message())?;
    db.migrate()
        .await
        .map_err(|e| format!("migrating bandeja's boxes: {e}"))?;
    db::migrate(&db)
        .await
        .map_err(|e| format!("migrating the shop's tables: {e}"))?;
    let transport: Option<Arc<dyn Transport>> = match &settings.broker {
        Some(broker) => Some(
            broker
                .connect()
                .await
                .map_err(|e| format!("connecting to {}: {e}", broker.describe()))?,
        ),
        None if settings.service != Service::All => {
            return Err(format!(
                "`--service {}` runs one service of the shop: give the broker the services meet on with `--nats nats://127.0.0.1:4222`, `--redis redis://127.0.0.1:6379` or `--kafka 127.0.0.1:9092`",
                settings.service.name()
            )
            .into())
        }
        None => None,
    };
    let saga = order::order_saga()?;
    let handlers = Handlers {
        notification_delay: settings.notification_delay,
        steps: StepRuns {
            delay: settings.step_delay,
            log: settings.run_log.clone(),
        },
    };
    let bandeja = messaging::bandeja(
        db.clone(),
        config,
        &handlers,
        settings.service,
        transport,
        &saga,
    )?;
    let listener = TcpListener::bind(&settings.listen)
        .await
        .map_err(|e| format!("listening on {}: {e}", settings.listen))?;
    let address = listener.local_addr()?;
    let admin_listener = match &settings.admin.listen {
        Some(admin) => Some(
            TcpListener::bind(admin)
                .await
                .map_err(|e| format!("listening on {admin} (the admin address): {e}"))?,
        ),
        None => None,
    };
    // Once per process: the workers' counters and histograms, rendered by /admin/metrics.
    let metrics = bandeja_http::metrics::install_recorder()
        .map_err(
            |error| tracing::warn!(%error, "serving /admin/metrics without the runtime's counters"),
        )
        .ok();

    let running = bandeja.start().await?;
    let generated = settings.admin.token.is_none();
    let token = settings
        .admin
        .token
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let mut options =
        config::admin_options(bandeja.config(), &token, settings.admin.failed_threshold)
            .liveness(running.liveness());
    if let Some(handle) = metrics {
        options = options.metrics(handle);
    }
    // The runtime's store: it knows the completion modes (outbox replay needs them).
    let admin = bandeja_http::router(bandeja.store().clone(), options);
    let app = app::router(AppState::new(db, bandeja.clone(), saga), settings.service);
    let (app, admin, admin_base) = match admin_listener {
        None => (
            // `/admin` is the dashboard; `/admin/` (which `nest` leaves out) leads there.
            app.nest("/admin", admin)
                .route("/admin/", get(|| async { Redirect::permanent("/admin") })),
            None,
            (address, format!("http://{address}/admin")),
        ),
        Some(listener) => {
            let at = listener.local_addr()?;
            (app, Some((listener, admin)), (at, format!("http://{at}")))
        }
    };
    println!("shop listening on http://{address}");
    announce_admin(admin_base, generated.then_some(token.as_str()));
    tracing::info!(%address, service = settings.service.name(), broker = settings.broker.as_ref().map(BrokerSettings::describe), notification_delay = ?settings.notification_delay, step_delay = ?settings.step_delay, "shop started");

    // Until Ctrl-C or SIGTERM: the servers stop taking requests and finish those in
    // flight, then the workers stop gracefully.
    let served = running.run_until(serve(listener, app, admin)).await;
    tracing::info!("shop stopped");
    Ok(served?)
}

/// Prints where the admin endpoints are, and the dashboard URL with a token generated for
/// this run when they are on loopback (elsewhere the generated token stays secret: admin
/// actions and listings are then closed until `SHOP_ADMIN_TOKEN` is set).
fn announce_admin((at, base): (SocketAddr, String), generated: Option<&str>) {
    println!("shop admin on {base} (GET /health/live, /health/ready, /health, /boxes, /metrics; dashboard /dashboard)");
    match generated {
        Some(token) if at.ip().is_loopback() => {
            println!("shop admin dashboard (token generated for this run): {base}/dashboard#token={token}");
        }
        Some(_) => {
            tracing::warn!(admin = %base, "no admin token set (SHOP_ADMIN_TOKEN): admin actions and message listings are closed; health, boxes and metrics are open")
        }
        None => {}
    }
}

/// Serves the shop's router, and the admin router on its own listener when given, until
/// Ctrl-C or SIGTERM.
async fn serve(
    listener: TcpListener,
    app: Router,
    admin: Option<(TcpListener, Router)>,
) -> std::io::Result<()> {
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(async move {
        bandeja::shutdown_signal().await;
        let _ = stop.send(true);
    });
    let until = |mut stopped: watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    // With the peer's address, so the admin router's audit lines (and a discarded row's
    // `discarded_by`) name the socket's peer, not only what a client claims in
    // `X-Forwarded-For`.
    let with_peer = |router: Router| router.into_make_service_with_connect_info::<SocketAddr>();
    let shop = axum::serve(listener, with_peer(app)).with_graceful_shutdown(until(stopped.clone()));
    match admin {
        None => shop.await,
        Some((listener, router)) => {
            let admin =
                axum::serve(listener, with_peer(router)).with_graceful_shutdown(until(stopped));
            tokio::try_join!(shop.into_future(), admin.into_future()).map(|_| ())
        }
    }
}
