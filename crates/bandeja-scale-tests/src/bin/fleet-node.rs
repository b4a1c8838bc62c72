//! `fleet-node`: one process of a fleet whose versions differ (issue 14, item 7). What it
//! subscribes to, handles and emits is given by flags, so one binary plays the old and the
//! new version of a service, or a producer with no subscriber at all.
//!
//! ```text
//! fleet-node --worker-id old-a --store postgres --database-url postgres://… --schema s1 \
//!     --on-event audit:noted --on-command ship:ship
//! fleet-node --worker-id new-b --store sqlite --database-url sqlite:///tmp/x/boxes.db \
//!     --runs-url sqlite:///tmp/x/runs.db --on-event audit:noted --on-event billing:noted \
//!     --slow billing=100 --emit noted=100 --emit-every 10 --wait-for-go
//! fleet-node … --transport nats --broker-url nats://127.0.0.1:4222 --prefix f1 --service fleet
//! ```
//!
//! - `--on-event NAME:TYPE` subscribes `NAME` to events of `TYPE` (`noted`, `charged`);
//!   `--on-command NAME:TYPE` registers `NAME` as the handler of commands of `TYPE`
//!   (`ship`, `refund`). Every one runs [`Recording`]: a row in `fleet_runs` per run
//!   (outside the handler's transaction), a row in `fleet_effects` per committed handling.
//!   `--slow NAME=MS`: each run of `NAME` takes that long.
//! - `--emit TYPE=COUNT` (repeatable) emits that many messages of `TYPE`, one per
//!   transaction (or `--emit-batch N` of them per transaction, as an application that
//!   writes several events with one business change), the types in turn, one round (one
//!   batch) every `--emit-every` milliseconds, message
//!   `n` with the partition key `k<n % keys>` (`--keys`, default 20); commands
//!   go to the service `--command-target`. With `--wait-for-go` emission starts when a line
//!   `go` arrives on stdin. It prints `emitted` when done. SIGTERM during emission stops it
//!   between two transactions.
//! - The store: `--store postgres` (`--database-url`, `--schema`; runs in the same
//!   schema through a pool of their own) or `--store sqlite` (`--database-url` of the
//!   shared file, `--runs-url` of the runs file). The schema or file must be migrated and
//!   hold `fleet_effects` (and, on PostgreSQL, `fleet_runs`).
//! - The transport: in process (default), or `--transport nats|amqp|redis|kafka` with `--broker-url`,
//!   `--prefix` (stream / exchange names) and `--service` (every process of one service
//!   shares its durable consumers or queues). Commands for `--command-target` travel on
//!   the topic `<prefix>-<target>`.
//!
//! bandeja's default configuration, except that every worker starts at once and polls
//! every 200 ms; 6 handlers at once (`--handler-concurrency`) and, on PostgreSQL, a pool of
//! 8 connections (`--pool`) plus 2 for the runs, so that a test's processes fit in the
//! server's `max_connections` with room for everyone else's. It prints `ready` once its workers run (its subscriptions are registered
//! in the database by then) and stops gracefully on SIGTERM: it stops emitting, then shuts
//! bandeja down (stop claiming, finish or release the batches in hand, unregister) and
//! exits 0. Logs go to stderr, filtered by `BANDEJA_LOG` (default `warn,sqlx::query=error`: SQLite's
//! lock waits make sqlx warn of slow statements).

use std::collections::{BTreeMap, HashMap};
use std::error::Error;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bandeja::postgres::PgStore;
use bandeja::sqlite::SqliteStore;
use bandeja::transport::Transport;
use bandeja::{Bandeja, BoxKind, Command, Config, Event, Outbox, TenantId};
use bandeja_scale_tests::fleet::{
    Charged, EffectStore, FleetType, Noted, Recording, Refund, RunLog, Ship,
};
use clap::{Parser, ValueEnum};
use tokio::signal::unix::{signal, SignalKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StoreKind {
    Postgres,
    Sqlite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TransportKind {
    Inproc,
    Nats,
    Amqp,
    Redis,
    /// Kafka; on librdkafka's mock cluster (`kafka-mock`), which creates its topics itself
    /// with 4 partitions, the transport creates none.
    Kafka,
}

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(name = "fleet-node", about = "One process of a mixed-version fleet")]
struct Args {
    /// `--log-format text|json`.
    #[command(flatten)]
    log: bandeja_scale_tests::LogArgs,
    /// The worker id written to `locked_by` and to the runs and effects.
    #[arg(long)]
    worker_id: String,
    /// The store.
    #[arg(long, value_enum, default_value = "postgres")]
    store: StoreKind,
    /// The store's URL (`postgres://…`, `sqlite://path`).
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// PostgreSQL: the schema of the boxes and the test tables.
    #[arg(long)]
    schema: Option<String>,
    /// SQLite: the URL of the file holding `fleet_runs`.
    #[arg(long)]
    runs_url: Option<String>,
    /// The transport.
    #[arg(long, value_enum, default_value = "inproc")]
    transport: TransportKind,
    /// The broker's address.
    #[arg(long)]
    broker_url: Option<String>,
    /// Stream / exchange / queue name prefix (brokers).
    #[arg(long, default_value = "fleet")]
    prefix: String,
    /// This process's service name (brokers).
    #[arg(long, default_value = "fleet")]
    service: String,
    /// The service commands are sent to.
    #[arg(long, default_value = "fleet")]
    command_target: String,
    /// `SUBSCRIBER:TYPE`: an event subscriber.
    #[arg(long, value_parser = parse_binding)]
    on_event: Vec<(String, FleetType)>,
    /// `HANDLER:TYPE`: a command handler.
    #[arg(long, value_parser = parse_binding)]
    on_command: Vec<(String, FleetType)>,
    /// `NAME=MS`: each run of subscriber or handler `NAME` takes MS milliseconds.
    #[arg(long, value_parser = parse_slow)]
    slow: Vec<(String, Duration)>,
    /// `TYPE=COUNT`: messages to emit.
    #[arg(long, value_parser = parse_emit)]
    emit: Vec<(FleetType, u64)>,
    /// Milliseconds between two rounds of emission (two transactions with `--emit-batch`).
    #[arg(long, default_value_t = 10)]
    emit_every: u64,
    /// Messages per emitting transaction, taken from the rounds in turn (1: each message
    /// in a transaction of its own).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    emit_batch: u16,
    /// How many partition keys the emitted messages spread over (message `n` has key
    /// `k<n % keys>`).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    keys: u64,
    /// Emit only once `go` is read from stdin.
    #[arg(long)]
    wait_for_go: bool,
    /// PostgreSQL: connections of the store's pool (several processes share the server's
    /// `max_connections`).
    #[arg(long, default_value_t = 8)]
    pool: u32,
    /// Handlers of one inbox batch run at once (fewer than the pool's connections).
    #[arg(long, default_value_t = 6)]
    handler_concurrency: usize,
}

fn parse_binding(s: &str) -> Result<(String, FleetType), String> {
    let (name, kind) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}`: expected NAME:TYPE"))?;
    if name.is_empty() {
        return Err(format!("`{s}`: empty name"));
    }
    Ok((name.to_owned(), kind.parse()?))
}

fn parse_slow(s: &str) -> Result<(String, Duration), String> {
    let (name, ms) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected NAME=MS"))?;
    let ms: u64 = ms.parse().map_err(|e| format!("`{s}`: {e}"))?;
    Ok((name.to_owned(), Duration::from_millis(ms)))
}

fn parse_emit(s: &str) -> Result<(FleetType, u64), String> {
    let (kind, count) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected TYPE=COUNT"))?;
    Ok((
        kind.parse()?,
        count.parse().map_err(|e| format!("`{s}`: {e}"))?,
    ))
}

/// The configuration: the defaults, every worker starting at once and polling every 200 ms,
/// the commands of `--command-target` on the topic `<prefix>-<target>` over a broker.
fn config(args: &Args) -> Config {
    let mut config = Config::default();
    for group in bandeja::BoxKind::ALL {
        let g = config.group_mut(group);
        g.polling_initial_delay = Duration::ZERO;
        g.polling_interval = Duration::from_millis(200);
    }
    if args.transport != TransportKind::Inproc {
        config.command_topics = BTreeMap::from([(
            args.command_target.clone(),
            format!("{}-{}", args.prefix, args.command_target),
        )]);
    }
    config
}

async fn transport(args: &Args) -> Result<Option<Arc<dyn Transport>>, Box<dyn Error>> {
    let url = || {
        args.broker_url
            .clone()
            .ok_or("--broker-url is required with a broker transport")
    };
    Ok(match args.transport {
        TransportKind::Inproc => None,
        TransportKind::Nats => {
            let options = bandeja::nats::NatsOptions::new(url()?)
                .prefix(args.prefix.clone())
                .partitions(4)
                .ack_wait(Duration::from_secs(5))
                .fetch_wait(Duration::from_millis(200))
                .max_age(Duration::from_secs(600));
            Some(Arc::new(
                bandeja::nats::NatsTransport::connect(options).await?,
            ))
        }
        TransportKind::Amqp => {
            let options = bandeja::amqp::AmqpOptions::default()
                .url(url()?)
                .prefix(args.prefix.clone())
                .partitions(4)
                .queue_expires(Some(Duration::from_secs(60)))
                .auto_delete_exchanges(true);
            Some(Arc::new(
                bandeja::amqp::AmqpTransport::connect(options).await?,
            ))
        }
        TransportKind::Redis => {
            // A killed process's entries are taken over after 3 s (30 s by default).
            let options = bandeja::redis::RedisOptions::new(url()?)
                .prefix(args.prefix.clone())
                .partitions(4)
                .claim_idle(Duration::from_secs(3));
            Some(Arc::new(
                bandeja::redis::RedisTransport::connect(options).await?,
            ))
        }
        TransportKind::Kafka => {
            // A killed process's partitions go to the others after 6 s.
            let options = bandeja::kafka::KafkaOptions::new(url()?)
                .prefix(args.prefix.clone())
                .partitions(4)
                .create_topics(false)
                .broker_creates_topics(true)
                .session_timeout(Duration::from_secs(6))
                .fetch_wait(Duration::from_millis(20));
            Some(Arc::new(
                bandeja::kafka::KafkaTransport::connect(options).await?,
            ))
        }
    })
}

/// The runtime of `store` with the subscribers and handlers of the flags.
fn build<S: EffectStore>(
    store: S,
    args: &Args,
    runs: RunLog,
    transport: Option<Arc<dyn Transport>>,
) -> Result<Bandeja<S>, Box<dyn Error>> {
    let takes: HashMap<String, Duration> = args.slow.iter().cloned().collect();
    let handler = Recording::new(&store, args.worker_id.clone(), runs, takes);
    let mut builder = Bandeja::builder(store)
        .config(config(args))
        .worker_id(args.worker_id.clone())
        .handler_concurrency(args.handler_concurrency);
    for (name, kind) in &args.on_event {
        builder = match kind {
            FleetType::Noted => builder.on_event::<Noted, _>(name, handler.clone()),
            FleetType::Charged => builder.on_event::<Charged, _>(name, handler.clone()),
            FleetType::Ship | FleetType::Refund => {
                return Err(format!("--on-event {name}:{kind:?}: a command type").into())
            }
        };
    }
    for (name, kind) in &args.on_command {
        builder = match kind {
            FleetType::Ship => builder.on_command::<Ship, _>(name, handler.clone()),
            FleetType::Refund => builder.on_command::<Refund, _>(name, handler.clone()),
            FleetType::Noted | FleetType::Charged => {
                return Err(format!("--on-command {name}:{kind:?}: an event type").into())
            }
        };
    }
    if let Some(transport) = transport {
        builder = builder.service(args.service.clone()).transport(transport);
    }
    Ok(builder.build()?)
}

/// A command to `target` with partition key `key`, from the default tenant.
async fn command<T: bandeja::Payload>(
    target: &str,
    payload: T,
    key: String,
) -> bandeja::Result<Command<T>> {
    let target = target.to_owned();
    let command = bandeja::tenant::scope(TenantId::default_tenant(), async move {
        Command::to_self(target, payload)
    })
    .await?;
    Ok(command.with_partition_key(key))
}

/// Writes one message of `kind` numbered `n` through `tx`.
async fn emit_one<S: EffectStore>(
    outbox: &Outbox<S>,
    tx: &mut S::Conn,
    target: &str,
    kind: FleetType,
    n: u64,
    keys: u64,
) -> bandeja::Result<()> {
    let key = format!("k{}", n % keys);
    match kind {
        FleetType::Noted => {
            outbox
                .emit(tx, &Event::new("Fleet", key, Noted { n }))
                .await
        }
        FleetType::Charged => {
            outbox
                .emit(tx, &Event::new("Fleet", key, Charged { n }))
                .await
        }
        FleetType::Ship => {
            outbox
                .send(tx, &command(target, Ship { n }, key).await?)
                .await
        }
        FleetType::Refund => {
            outbox
                .send(tx, &command(target, Refund { n }, key).await?)
                .await
        }
    }
}

/// Up to `limit` messages of one round of `plan` (one of each type not done, in turn,
/// from `next`), advancing `next`.
fn round(
    plan: &[(FleetType, u64)],
    next: &mut [u64],
    limit: usize,
    into: &mut Vec<(FleetType, u64)>,
) {
    for (i, (kind, count)) in plan.iter().enumerate() {
        if next[i] < *count && into.len() < limit {
            into.push((*kind, next[i]));
            next[i] += 1;
        }
    }
}

/// The next `batch` messages of `plan`: rounds in turn until `batch` or the end.
fn next_batch(plan: &[(FleetType, u64)], next: &mut [u64], batch: usize) -> Vec<(FleetType, u64)> {
    let mut taken = Vec::new();
    loop {
        let before = taken.len();
        round(plan, next, batch, &mut taken);
        if taken.len() == before || taken.len() >= batch {
            return taken;
        }
    }
}

/// Emits the `--emit` counts, the types in turn, `batch` messages per transaction, until
/// done or `stop`.
async fn emit<S: EffectStore>(
    bandeja: Bandeja<S>,
    emission: Emission,
    target: String,
    stop: Arc<AtomicBool>,
) -> Result<bool, String> {
    let Emission {
        plan,
        every,
        batch,
        keys,
    } = emission;
    let (store, outbox) = (bandeja.store(), bandeja.outbox());
    let mut next: Vec<u64> = vec![0; plan.len()];
    loop {
        // One message per transaction: a round of the types, each in its own; otherwise
        // the next `batch` messages in one.
        let messages = if batch == 1 {
            let mut one_round = Vec::new();
            round(&plan, &mut next, plan.len(), &mut one_round);
            one_round
        } else {
            next_batch(&plan, &mut next, batch)
        };
        if messages.is_empty() {
            return Ok(true);
        }
        // A round alone in `batch`es of one, the `batch` messages taken together in one.
        for group in messages.chunks(batch) {
            if stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            let failed = |e: &dyn std::fmt::Display| format!("emitting {group:?}: {e}");
            let mut tx = store.begin().await.map_err(|e| failed(&e))?;
            for (kind, n) in group {
                emit_one(&outbox, &mut tx, &target, *kind, *n, keys)
                    .await
                    .map_err(|e| failed(&e))?;
            }
            store.commit(tx).await.map_err(|e| failed(&e))?;
            // As `Bandeja::emit` does, for a run that arms it.
            bandeja::fault::point("after-emit-commit");
            // As `Bandeja::emit` does: the dispatchers publish now, not at their next poll.
            store.wakers().wake(BoxKind::OutboxEvents);
            store.wakers().wake(BoxKind::OutboxCommands);
        }
        tokio::time::sleep(every).await;
    }
}

/// What `--emit`, `--emit-every`, `--emit-batch` and `--keys` ask for.
struct Emission {
    plan: Vec<(FleetType, u64)>,
    every: Duration,
    batch: usize,
    keys: u64,
}

fn say(line: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")?;
    stdout.flush()
}

/// Waits for a line `go` on stdin (any other line is ignored; end of input: never).
async fn go() {
    let (send, receive) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if line.trim() == "go" {
                let _ = send.send(());
                return;
            }
        }
    });
    if receive.await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn serve<S: EffectStore>(bandeja: Bandeja<S>, args: &Args) -> Result<(), Box<dyn Error>> {
    // Listen before announcing readiness, so a SIGTERM right after `ready` is graceful.
    let mut terminate = signal(SignalKind::terminate())?;
    let running = bandeja.start().await?;
    say("ready")?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut emission = if args.emit.is_empty() {
        None
    } else {
        let (bandeja, stop) = (bandeja.clone(), stop.clone());
        let emission = Emission {
            plan: args.emit.clone(),
            every: Duration::from_millis(args.emit_every),
            batch: usize::from(args.emit_batch),
            keys: args.keys,
        };
        let (target, wait) = (args.command_target.clone(), args.wait_for_go);
        Some(tokio::spawn(async move {
            if wait {
                go().await;
            }
            emit(bandeja, emission, target, stop).await
        }))
    };
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            result = tokio::signal::ctrl_c() => { result?; break }
            done = async { emission.as_mut().expect("guarded").await }, if emission.is_some() => {
                emission = None;
                match done? {
                    Ok(true) => say("emitted")?,
                    Ok(false) => {}
                    Err(error) => return Err(error.into()),
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(emission) = emission {
        if let Err(error) = emission.await? {
            return Err(error.into());
        }
    }
    running.shutdown().await;
    eprintln!("fleet-node {}: stopped gracefully", args.worker_id);
    Ok(())
}

async fn run(args: Args) -> Result<(), Box<dyn Error>> {
    let transport = transport(&args).await?;
    match args.store {
        StoreKind::Postgres => {
            let schema = args
                .schema
                .as_deref()
                .ok_or("--schema is required with --store postgres")?;
            let mut options = bandeja::postgres::PgStoreOptions::with_schema(schema);
            options.max_connections = args.pool;
            let store = PgStore::connect_with_options(&args.database_url, &options).await?;
            let recorder = sqlx::postgres::PgPoolOptions::new()
                .max_connections(2)
                .connect(&args.database_url)
                .await?;
            let runs = RunLog::pg(recorder, schema);
            serve(build(store, &args, runs, transport)?, &args).await
        }
        StoreKind::Sqlite => {
            let runs_url = args
                .runs_url
                .as_deref()
                .ok_or("--runs-url is required with --store sqlite")?;
            let store = SqliteStore::connect(&args.database_url).await?;
            let runs =
                RunLog::sqlite(bandeja_scale_tests::fleet::open_sqlite_runs(runs_url).await?);
            serve(build(store, &args, runs, transport)?, &args).await
        }
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    bandeja_scale_tests::log_to_stderr("warn,sqlx::query=error", args.log.log_format);
    if let Err(error) = run(args).await {
        eprintln!("fleet-node: {error}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emission_batches_take_the_types_in_turn() {
        let plan = [(FleetType::Noted, 3), (FleetType::Ship, 1)];
        let mut next = [0, 0];
        let batches: Vec<Vec<(FleetType, u64)>> =
            std::iter::from_fn(|| Some(next_batch(&plan, &mut next, 3)).filter(|b| !b.is_empty()))
                .collect();
        assert_eq!(
            batches,
            [
                vec![
                    (FleetType::Noted, 0),
                    (FleetType::Ship, 0),
                    (FleetType::Noted, 1)
                ],
                vec![(FleetType::Noted, 2)],
            ]
        );
        let mut next = [0, 0];
        let mut one = Vec::new();
        round(&plan, &mut next, plan.len(), &mut one);
        assert_eq!(one, [(FleetType::Noted, 0), (FleetType::Ship, 0)]);
    }

    #[test]
    fn flags_parse() {
        let args = Args::try_parse_from([
            "fleet-node",
            "--worker-id",
            "w",
            "--database-url",
            "postgres://x",
            "--on-event",
            "audit:noted",
            "--on-event",
            "billing:charged",
            "--on-command",
            "refund:refund",
            "--slow",
            "billing=100",
            "--emit",
            "ship=5",
        ])
        .expect("valid flags");
        assert_eq!(
            args.on_event,
            vec![
                ("audit".to_owned(), FleetType::Noted),
                ("billing".to_owned(), FleetType::Charged)
            ]
        );
        assert_eq!(
            args.slow,
            vec![("billing".to_owned(), Duration::from_millis(100))]
        );
        assert_eq!(args.emit, vec![(FleetType::Ship, 5)]);
        assert!(parse_binding("audit").is_err());
        assert!(parse_binding(":noted").is_err());
        assert!(parse_emit("noted=x").is_err());
    }
}
