//! The `shop` binary: reads the arguments, sets up logging, opens the database named by
//! the URL scheme (SQLite or PostgreSQL) and runs the shop.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bandeja::logging::{LogFormat, Logging};
use clap::Parser;

use shop::messaging::Service;
use shop::server::{self, AdminSettings, BrokerSettings, Settings, StartError};

/// The bandeja shop example: order, billing, inventory, shipping and notification modules
/// exchanging an event and an orchestrated saga's commands through a transactional outbox
/// and idempotent inboxes.
#[derive(Debug, Parser)]
#[command(name = "shop", version)]
struct Args {
    /// Address to listen on (port 0 picks a free one; the bound address is printed).
    #[arg(long, env = "SHOP_LISTEN", default_value = "127.0.0.1:8080")]
    listen: String,

    /// Database URL: `sqlite://FILE` (created if missing) or `postgres://...`.
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://shop.db")]
    database: String,

    /// Pause of the notification handler before it writes, e.g. `20s` (crash demo).
    #[arg(long, env = "SHOP_NOTIFICATION_DELAY", value_parser = shop::config::parse_delay)]
    notification_delay: Option<Duration>,

    /// Pause of the saga step handlers (charge, refund, reserve, release, dispatch) before
    /// they write, e.g. `300ms` (the saga crash tests' window).
    #[arg(long, env = "SHOP_STEP_DELAY", value_parser = shop::config::parse_delay)]
    step_delay: Option<Duration>,

    /// Append one line per run of a saga step handler to this file, outside the handler's
    /// transaction (a run cut short by a kill is still there).
    #[arg(long, env = "SHOP_RUN_LOG", value_name = "FILE")]
    run_log: Option<PathBuf>,

    /// Which part of the shop to run: `all` (one process), or one service (`order`,
    /// `billing`, `inventory`, `shipping`, `notification`) with its own database, meeting
    /// the others on a broker (`--nats`, `--redis` or `--kafka`).
    #[arg(long, env = "SHOP_SERVICE", value_enum, default_value = "all")]
    service: Service,

    /// NATS server the services exchange events and the saga's commands through (JetStream), e.g.
    /// `nats://127.0.0.1:4222`. Without a broker, the in-process transport.
    #[arg(long, env = "SHOP_NATS_URL", conflicts_with_all = ["redis", "kafka"])]
    nats: Option<String>,

    /// Redis server the services meet on instead (Redis Streams), e.g.
    /// `redis://127.0.0.1:6379`.
    #[arg(long, env = "SHOP_REDIS_URL", conflicts_with = "kafka")]
    redis: Option<String>,

    /// Kafka brokers the services meet on instead, e.g. `127.0.0.1:9092`.
    #[arg(long, env = "SHOP_KAFKA_SERVERS")]
    kafka: Option<String>,

    /// Kafka: whether the shop creates its topics (`false` for brokers that create them
    /// themselves, as librdkafka's mock cluster does).
    #[arg(long, env = "SHOP_KAFKA_CREATE_TOPICS", default_value_t = true, action = clap::ArgAction::Set)]
    kafka_create_topics: bool,

    /// How many partitions each address is split into on the broker (every service of the
    /// shop must use the same count).
    #[arg(long, env = "SHOP_BROKER_PARTITIONS", default_value_t = 8)]
    broker_partitions: u16,

    /// The names on the broker (streams, subjects, topics) start with this.
    #[arg(
        long,
        env = "SHOP_BROKER_PREFIX",
        alias = "nats-prefix",
        default_value = "shop"
    )]
    broker_prefix: String,

    /// bandeja's configuration file (TOML; bandeja's keys or the seed's `app.*` ones),
    /// over the shop's defaults and under the `BANDEJA_*` variables. An unknown key or a
    /// bad value stops the shop at start with an error naming the key and the file.
    #[arg(long, env = "BANDEJA_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,

    /// Serve bandeja's admin endpoints (health, boxes, metrics, dashboard) at the root of
    /// this address instead of under `/admin` on --listen, e.g. `0.0.0.0:9090`.
    #[arg(long, env = "SHOP_ADMIN_LISTEN", value_name = "ADDR")]
    admin_listen: Option<String>,

    /// Admin token: admin actions (retry, replay, purge, …) and message listings need it as
    /// `Authorization: Bearer <token>`. Without one, a token is generated for the run.
    #[arg(long, env = "SHOP_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,

    /// More FAILED rows than this (all boxes together) make /health/ready DOWN; 0: any
    /// FAILED row does. Without it, FAILED rows do not change readiness.
    #[arg(long, env = "SHOP_FAILED_THRESHOLD", value_name = "N")]
    failed_threshold: Option<u64>,

    /// Log lines on stderr as `text` or `json` (one object per line); the filter is
    /// `BANDEJA_LOG` (default `info`).
    #[arg(long, env = "BANDEJA_LOG_FORMAT", value_name = "FORMAT")]
    log_format: Option<LogFormat>,

    /// Print the JSON Schemas of the shop's payloads (the snapshot `bandeja schema check`
    /// reads) on stdout and exit, without opening a database or serving.
    #[arg(long)]
    export_schemas: bool,
}

/// bandeja's logging set-up: BANDEJA_LOG, else RUST_LOG, else `info`; text or JSON lines
/// on stderr (`--log-format`, BANDEJA_LOG_FORMAT).
fn init_logging(format: Option<LogFormat>) -> Result<(), bandeja::logging::LoggingError> {
    Logging::new().default_filter("info").format(format).init()
}

/// The broker of `--nats`, `--redis` or `--kafka` (at most one: clap refuses two).
fn broker(args: &Args) -> Option<BrokerSettings> {
    let prefix = args.broker_prefix.clone();
    let partitions = args.broker_partitions;
    if let Some(url) = &args.nats {
        return Some(BrokerSettings::Nats {
            url: url.clone(),
            prefix,
            partitions,
        });
    }
    if let Some(url) = &args.redis {
        return Some(BrokerSettings::Redis {
            url: url.clone(),
            prefix,
            partitions,
        });
    }
    args.kafka.as_ref().map(|servers| BrokerSettings::Kafka {
        servers: servers.clone(),
        prefix,
        partitions,
        create_topics: args.kafka_create_topics,
    })
}

async fn run(args: Args) -> Result<(), StartError> {
    let broker = broker(&args);
    let settings = Settings {
        listen: args.listen,
        notification_delay: args.notification_delay.unwrap_or(Duration::ZERO),
        step_delay: args.step_delay.unwrap_or(Duration::ZERO),
        run_log: args.run_log,
        service: args.service,
        config: args.config,
        broker,
        admin: AdminSettings {
            listen: args.admin_listen,
            token: args.admin_token.filter(|t| !t.trim().is_empty()),
            failed_threshold: args.failed_threshold,
        },
    };
    let scheme = args.database.split(':').next().unwrap_or_default();
    match scheme {
        "sqlite" => {
            let store = bandeja::sqlite::SqliteStore::connect(&args.database).await?;
            server::run(store, settings).await
        }
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => {
            let store = bandeja::postgres::PgStore::connect(&args.database).await?;
            server::run(store, settings).await
        }
        _ => Err(format!(
            "unsupported database URL `{}`: use sqlite://FILE or postgres://USER@HOST/DB",
            args.database
        )
        .into()),
    }
}

/// `--export-schemas`: the snapshot on stdout.
fn export_schemas() -> ExitCode {
    let written = shop::schemas::export()
        .map_err(|e| e.to_string())
        .and_then(|snapshot| {
            let mut out = std::io::stdout().lock();
            out.write_all(snapshot.to_json().as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot write the schemas: {e}"))
        });
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shop: {e}");
            ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if args.export_schemas {
        return export_schemas();
    }
    if let Err(e) = init_logging(args.log_format) {
        eprintln!("shop: {e}");
        return ExitCode::FAILURE;
    }
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shop: {e}");
            ExitCode::FAILURE
        }
    }
}
