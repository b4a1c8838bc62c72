//! `scale-worker`: one process running bandeja's workers against a PostgreSQL schema until
//! it is killed, or until SIGTERM / Ctrl-C, which shut it down gracefully.
//!
//! ```text
//! scale-worker --database-url postgres://postgres@127.0.0.1/test --schema s1 \
//!     [--fail-rate 0.1] [--lease 5] [--worker-id w1] [--handler-ms 500] [--default-config] \
//!     [--nats nats://127.0.0.1:4222 | --redis redis://127.0.0.1:6379 | --kafka 127.0.0.1:9092] \
//!     [--nats-prefix chaos1]
//! ```
//!
//! The schema must already be migrated and hold the test's tables
//! ([`bandeja_scale_tests::create_tables`]). Two subscribers, `alpha` and `beta`, handle
//! [`Tick`] with [`EffectWriter`] and reject [`Poison`] permanently. With `--nats` the
//! workers publish to and consume from NATS JetStream as the service `scale` (every
//! `scale-worker` on the schema must then use the same prefix); `--redis` (Redis Streams)
//! and `--kafka` (Kafka brokers) do the same over those; without any they use the
//! in-process transport. The process prints `ready` on stdout once its workers
//! run. Logs go to stderr, filtered by `BANDEJA_LOG` (default `error`).

use std::error::Error;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use bandeja::postgres::PgStore;
use bandeja::Bandeja;
use bandeja_scale_tests::{worker_config, EffectWriter, Poison, Tick, SUBSCRIBERS};
use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(name = "scale-worker", about = "Runs bandeja workers until killed")]
struct Args {
    /// `--log-format text|json`.
    #[command(flatten)]
    log: bandeja_scale_tests::LogArgs,
    /// PostgreSQL URL.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Schema holding the boxes and the test tables.
    #[arg(long)]
    schema: String,
    /// Probability (0..=1) that a handler attempt fails retriably before doing anything.
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    fail_rate: f64,
    /// `lock-at-most-for` of events.inbox and events.outbox, in seconds.
    #[arg(long, default_value = "5", value_parser = parse_lease)]
    lease: Duration,
    /// The worker id written to `locked_by` (default: `scale-<pid>-<random>`).
    #[arg(long)]
    worker_id: Option<String>,
    /// Emits this many ticks with `Bandeja::emit` (one transaction each) once running.
    #[arg(long, default_value_t = 0)]
    emit: u64,
    /// Publish and consume through this NATS JetStream server instead of in process.
    #[arg(long)]
    nats: Option<String>,
    /// The NATS stream and subject prefix (with `--nats`).
    #[arg(long, default_value = "bandeja")]
    nats_prefix: String,
    /// NATS partitions per address (with `--nats`; with `--redis` too).
    #[arg(long, default_value_t = 4)]
    nats_partitions: u16,
    /// Publish and consume through this Redis (Streams) instead of in process; the names
    /// start with `--nats-prefix`.
    #[arg(long, conflicts_with = "nats")]
    redis: Option<String>,
    /// Publish and consume through these Kafka brokers (bootstrap servers,
    /// `host:port[,host:port…]`) instead of in process; the topics start with
    /// `--nats-prefix` and have `--nats-partitions` partitions, created if missing.
    #[arg(long, conflicts_with_all = ["nats", "redis"], value_name = "BOOTSTRAP_SERVERS")]
    kafka: Option<String>,
    /// With `--kafka`: the brokers create a missing topic when its metadata is asked for
    /// (librdkafka's mock cluster, which does not answer `CreateTopics`), so the worker
    /// does not create them itself.
    #[arg(long, requires = "kafka")]
    kafka_topics_by_brokers: bool,
    /// Each handler run takes this long (awaited inside its transaction, like a call to
    /// another service) and is recorded in the `runs` table, outside the transaction.
    #[arg(long, default_value_t = 0)]
    handler_ms: u64,
    /// Run with bandeja's default configuration (lease, batch size, retries, concurrency)
    /// instead of the scale tests' (only the initial polling delay is zero); `--lease`
    /// is then ignored.
    #[arg(long)]
    default_config: bool,
}

/// The service name of every `scale-worker` on a broker.
const SERVICE: &str = "scale";

/// The broker transport of `--nats`, `--redis` or `--kafka`, if given.
async fn broker_transport(
    args: &Args,
) -> Result<Option<Arc<dyn bandeja::transport::Transport>>, Box<dyn Error>> {
    if let Some(servers) = &args.kafka {
        let options = bandeja::kafka::KafkaOptions::new(servers.clone())
            .prefix(args.nats_prefix.clone())
            .partitions(args.nats_partitions)
            .create_topics(!args.kafka_topics_by_brokers)
            .broker_creates_topics(args.kafka_topics_by_brokers)
            // A process killed with partitions assigned: the group hands them on after this.
            .session_timeout(Duration::from_secs(6));
        return Ok(Some(Arc::new(
            bandeja::kafka::KafkaTransport::connect(options).await?,
        )));
    }
    if let Some(url) = &args.redis {
        let options = bandeja::redis::RedisOptions::new(url.clone())
            .prefix(args.nats_prefix.clone())
            .partitions(args.nats_partitions)
            // A process killed with entries in hand: the others take them after this.
            .claim_idle(Duration::from_secs(3));
        return Ok(Some(Arc::new(
            bandeja::redis::RedisTransport::connect(options).await?,
        )));
    }
    let Some(url) = &args.nats else {
        return Ok(None);
    };
    let options = bandeja::nats::NatsOptions {
        url: url.clone(),
        prefix: args.nats_prefix.clone(),
        partitions: args.nats_partitions,
        // A process killed with messages in hand: they come back after this.
        ack_wait: Duration::from_secs(5),
        ..Default::default()
    };
    Ok(Some(Arc::new(
        bandeja::nats::NatsTransport::connect(options).await?,
    )))
}

fn parse_rate(s: &str) -> Result<f64, String> {
    let rate: f64 = s.parse().map_err(|e| format!("not a number: {e}"))?;
    if (0.0..=1.0).contains(&rate) {
        Ok(rate)
    } else {
        Err("must be between 0 and 1".to_owned())
    }
}

fn parse_lease(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|e| format!("not a number: {e}"))?;
    match Duration::try_from_secs_f64(secs) {
        Ok(lease) if !lease.is_zero() => Ok(lease),
        _ => Err("must be a positive number of seconds".to_owned()),
    }
}

async fn run(args: Args) -> Result<(), Box<dyn Error>> {
    let transport = broker_transport(&args).await?;
    let worker_id = args
        .worker_id
        .unwrap_or_else(|| format!("scale-{}-{:04x}", std::process::id(), rand::random::<u16>()));
    let store = PgStore::connect_with_schema(&args.database_url, &args.schema).await?;
    let mut writer = EffectWriter::new(&store, worker_id.clone(), args.fail_rate);
    if args.handler_ms > 0 {
        let recorder = sqlx::postgres::PgPoolOptions::new()
            .max_connections(4)
            .connect(&args.database_url)
            .await?;
        writer = writer.taking(Duration::from_millis(args.handler_ms), recorder);
    }
    let config = if args.default_config {
        let mut config = bandeja::Config::default();
        for group in bandeja::BoxKind::ALL {
            config.group_mut(group).polling_initial_delay = Duration::ZERO;
        }
        config
    } else {
        worker_config(args.lease)
    };
    let [first, second] = SUBSCRIBERS;
    let mut builder = Bandeja::builder(store)
        .config(config)
        .worker_id(worker_id.clone())
        .on_event::<Tick, _>(first, writer.clone())
        .on_event::<Tick, _>(second, writer.clone())
        .on_event::<Poison, _>(first, writer.clone())
        .on_event::<Poison, _>(second, writer);
    if let Some(transport) = transport {
        builder = builder.service(SERVICE).transport(transport);
    }
    let bandeja = builder.build()?;
    // Listen before announcing readiness, so a SIGTERM right after `ready` is graceful.
    let mut terminate = signal(SignalKind::terminate())?;
    let running = bandeja.start().await?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "ready")?;
        stdout.flush()?;
    }
    for n in 0..args.emit {
        bandeja
            .emit(&bandeja::Event::new("Scale", format!("e{n}"), Tick { n }))
            .await?;
    }
    tokio::select! {
        _ = terminate.recv() => {}
        result = tokio::signal::ctrl_c() => result?,
    }
    running.shutdown().await;
    eprintln!("scale-worker {worker_id}: stopped gracefully");
    Ok(())
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    bandeja_scale_tests::log_to_stderr("error", args.log.log_format);
    if let Err(error) = run(args).await {
        eprintln!("scale-worker: {error}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_are_checked() {
        let args = Args::try_parse_from([
            "scale-worker",
            "--database-url",
            "postgres://x",
            "--schema",
            "s",
            "--fail-rate",
            "0.1",
            "--lease",
            "2.5",
        ])
        .expect("valid flags");
        assert_eq!(args.lease, Duration::from_millis(2500));
        assert!((args.fail_rate - 0.1).abs() < f64::EPSILON);
        assert!(parse_rate("1.5").is_err());
        assert!(parse_lease("0").is_err());
        assert!(parse_lease("-1").is_err());
        assert_eq!(parse_lease("5"), Ok(Duration::from_secs(5)));
        let base = [
            "scale-worker",
            "--database-url",
            "postgres://x",
            "--schema",
            "s",
        ];
        let kafka = Args::try_parse_from(base.iter().copied().chain(["--kafka", "127.0.0.1:9"]))
            .expect("--kafka alone");
        assert_eq!(kafka.kafka.as_deref(), Some("127.0.0.1:9"));
        for other in [["--nats", "nats://x"], ["--redis", "redis://x"]] {
            let both = base
                .iter()
                .copied()
                .chain(["--kafka", "127.0.0.1:9"])
                .chain(other);
            assert!(
                Args::try_parse_from(both).is_err(),
                "--kafka with {other:?}"
            );
        }
    }
}
