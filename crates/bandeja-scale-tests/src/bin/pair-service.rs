//! `pair-service`: one of the two services of the broker tests, as its own process with
//! its own PostgreSQL schema, talking to the other only through NATS JetStream, RabbitMQ, Redis Streams or Kafka.
//!
//! ```text
//! pair-service --role consumer --transport nats --broker-url nats://127.0.0.1:4222 \
//!     --prefix t1 --database-url postgres://postgres@127.0.0.1/test --schema c1
//! pair-service --role producer --transport nats ... --schema p1 --events 10000 --commands 1000
//! ```
//!
//! The consumer (service `pair-consumer`) handles [`Tick`] events (subscriber `effects`) and
//! [`Fulfil`] commands (handler `fulfil`) with [`EffectWriter`]: one effect row per
//! `(message, subscriber)`, a violation row for a second application. The producer (service
//! `pair-producer`) emits `--events` ticks over 50 keys and `--commands` commands to the
//! consumer, `--emit-batch` per transaction every `--emit-every` milliseconds, so emission
//! goes on while a test stops the broker; it prints `emitted` when done. Both print `ready`
//! once running and stop gracefully on SIGTERM. The schemas must be migrated and hold the
//! effect tables. Logs go to stderr, filtered by `BANDEJA_LOG` (default `warn`).

use std::collections::BTreeMap;
use std::error::Error;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use bandeja::postgres::PgStore;
use bandeja::transport::Transport;
use bandeja::{Bandeja, Command, Event, MessageRecord, Store, TenantId};
use bandeja_scale_tests::{worker_config, EffectWriter, Fulfil, Tick};
use clap::{Parser, ValueEnum};
use tokio::signal::unix::{signal, SignalKind};

/// The consumer's service name, and the key of its command topic.
const CONSUMER: &str = "pair-consumer";
/// The producer's service name.
const PRODUCER: &str = "pair-producer";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Role {
    Producer,
    Consumer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Broker {
    Nats,
    Amqp,
    Redis,
    Kafka,
}

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "pair-service",
    about = "One service of the two-services broker test"
)]
struct Args {
    /// `--log-format text|json`.
    #[command(flatten)]
    log: bandeja_scale_tests::LogArgs,
    /// Which service this process is.
    #[arg(long, value_enum)]
    role: Role,
    /// The broker.
    #[arg(long, value_enum)]
    transport: Broker,
    /// The broker's address.
    #[arg(long)]
    broker_url: String,
    /// Names of streams, exchanges and queues start with this.
    #[arg(long)]
    prefix: String,
    /// PostgreSQL URL.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// This service's schema.
    #[arg(long)]
    schema: String,
    /// Producer: events to emit.
    #[arg(long, default_value_t = 0)]
    events: u64,
    /// Producer: commands to send (spread among the events).
    #[arg(long, default_value_t = 0)]
    commands: u64,
    /// Producer: events per emitting transaction.
    #[arg(long, default_value_t = 100)]
    emit_batch: u64,
    /// Producer: milliseconds between two emitting transactions.
    #[arg(long, default_value_t = 100)]
    emit_every: u64,
    /// Kafka: whether the transport creates its topics with `CreateTopics` (off for
    /// librdkafka's mock cluster, which does not answer it: the brokers are then asked to
    /// create a missing topic with the metadata request, 4 partitions on the mock).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    kafka_create_topics: bool,
}

async fn transport(args: &Args) -> Result<Arc<dyn Transport>, Box<dyn Error>> {
    Ok(match args.transport {
        Broker::Nats => {
            let options = bandeja::nats::NatsOptions {
                url: args.broker_url.clone(),
                prefix: args.prefix.clone(),
                partitions: 4,
                ..Default::default()
            };
            Arc::new(bandeja::nats::NatsTransport::connect(options).await?)
        }
        Broker::Amqp => {
            let options = bandeja::amqp::AmqpOptions {
                url: args.broker_url.clone(),
                prefix: args.prefix.clone(),
                partitions: 4,
                ..Default::default()
            };
            Arc::new(bandeja::amqp::AmqpTransport::connect(options).await?)
        }
        Broker::Redis => {
            let options = bandeja::redis::RedisOptions {
                url: args.broker_url.clone(),
                prefix: args.prefix.clone(),
                partitions: 4,
                ..Default::default()
            };
            Arc::new(bandeja::redis::RedisTransport::connect(options).await?)
        }
        Broker::Kafka => {
            let options = bandeja::kafka::KafkaOptions::new(&args.broker_url)
                .prefix(&args.prefix)
                .partitions(4)
                .create_topics(args.kafka_create_topics)
                .broker_creates_topics(!args.kafka_create_topics)
                .session_timeout(std::time::Duration::from_secs(6));
            Arc::new(bandeja::kafka::KafkaTransport::connect(options).await?)
        }
    })
}

/// Emits the producer's workload: ticks over 50 keys, a command every
/// `events / commands` ticks, in paced transactions.
async fn emit(bandeja: &Bandeja<PgStore>, args: &Args) -> Result<(), Box<dyn Error>> {
    let store = bandeja.store();
    let outbox = bandeja.outbox();
    let tenant = TenantId::default_tenant();
    let every = args
        .events
        .checked_div(args.commands)
        .unwrap_or(u64::MAX)
        .max(1);
    let (mut events, mut commands) = (0u64, 0u64);
    while events < args.events || commands < args.commands {
        let mut tx = store.begin().await?;
        let mut records = Vec::new();
        for _ in 0..args.emit_batch.max(1) {
            if events < args.events {
                let event = Event::new("Pair", format!("k{}", events % 50), Tick { n: events });
                records.push(MessageRecord::from_event(&event)?);
                events += 1;
            }
            let due = events % every == 0 || events >= args.events;
            if commands < args.commands && due {
                let n = commands;
                let command = bandeja::tenant::scope(tenant.clone(), async move {
                    Command::to_self(CONSUMER, Fulfil { n })
                })
                .await?
                .with_partition_key(format!("c{}", n % 10));
                outbox.send(&mut *tx, &command).await?;
                commands += 1;
            }
        }
        outbox.emit_records(&mut *tx, records).await?;
        store.commit(tx).await?;
        tokio::time::sleep(Duration::from_millis(args.emit_every)).await;
    }
    Ok(())
}

fn say(line: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")?;
    stdout.flush()
}

async fn run(args: Args) -> Result<(), Box<dyn Error>> {
    let store = PgStore::connect_with_schema(&args.database_url, &args.schema).await?;
    let mut config = worker_config(Duration::from_secs(10));
    config.command_topics =
        BTreeMap::from([(CONSUMER.to_owned(), format!("{}-consumer", args.prefix))]);
    let builder = Bandeja::builder(store.clone())
        .config(config)
        .transport(transport(&args).await?);
    let bandeja = match args.role {
        Role::Producer => builder.service(PRODUCER).build()?,
        Role::Consumer => {
            let writer = EffectWriter::new(&store, CONSUMER, 0.0);
            builder
                .service(CONSUMER)
                .on_event::<Tick, _>("effects", writer.clone())
                .on_command::<Fulfil, _>("fulfil", writer)
                .build()?
        }
    };
    let mut terminate = signal(SignalKind::terminate())?;
    let running = bandeja.start().await?;
    say("ready")?;
    if args.role == Role::Producer {
        emit(&bandeja, &args).await?;
        say("emitted")?;
    }
    tokio::select! {
        _ = terminate.recv() => {}
        result = tokio::signal::ctrl_c() => result?,
    }
    running.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    bandeja_scale_tests::log_to_stderr("warn", args.log.log_format);
    if let Err(error) = run(args).await {
        eprintln!("pair-service: {error}");
        std::process::exit(1);
    }
}
