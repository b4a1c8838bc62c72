//! Sets up the store, runs the chosen mode, prints the figures.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bandeja::postgres::PgStore;
use bandeja::sqlite::SqliteStore;
use bandeja::transport::Transport;
use bandeja::{Bandeja, BoxKind, Config, Event, HandlerTransaction, MessageRecord, Running};

use crate::args::{Args, HandlerKind, Mode, StoreKind, TransportKind};
use crate::db::{BenchDb, BoxError};
use crate::handler::{now_us, BenchPing, Effect};

const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Runs the benchmark described by `args`.
pub(crate) async fn run(args: Args) -> Result<(), BoxError> {
    match args.store {
        StoreKind::Sqlite => {
            let (url, temp) = match &args.database_url {
                Some(url) => (url.clone(), None),
                None => {
                    let dir = std::env::temp_dir()
                        .join(format!("bandeja-bench-{}", uuid::Uuid::new_v4()));
                    std::fs::create_dir_all(&dir)?;
                    (
                        format!("sqlite://{}", dir.join("bench.db").display()),
                        Some(dir),
                    )
                }
            };
            let store = SqliteStore::connect(&url).await?;
            let result = go(store, &args, &url, None).await;
            if let Some(dir) = temp {
                let _ = std::fs::remove_dir_all(dir);
            }
            result
        }
        StoreKind::Postgres => {
            let url = args
                .database_url
                .clone()
                .unwrap_or_else(|| DEFAULT_PG.to_owned());
            let (schema, fresh) = match &args.schema {
                Some(schema) => (schema.clone(), false),
                None => (format!("bench_{}", uuid::Uuid::new_v4().simple()), true),
            };
            // Slow handlers each hold a connection for their whole transaction: the pool
            // must not be what limits them (the 0 ms drain keeps the default pool, as
            // the builds it is compared with).
            let mut options = bandeja::postgres::PgStoreOptions::with_schema(&schema);
            if args.handler_ms > 0 {
                let wanted = u32::try_from(args.concurrency)
                    .unwrap_or(u32::MAX)
                    .saturating_add(8);
                options.max_connections = options.max_connections.max(wanted);
            }
            let store = PgStore::connect_with_options(&url, &options).await?;
            let result = go(store.clone(), &args, &url, Some(&schema)).await;
            if fresh && !args.worker_only {
                sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                    .execute(store.pool())
                    .await?;
            }
            result
        }
    }
}

fn config(args: &Args) -> Result<Config, BoxError> {
    let mut config = Config::default();
    let handler_transaction: HandlerTransaction = args.handler_transaction.parse()?;
    for group in BoxKind::ALL {
        let g = config.group_mut(group);
        g.polling_initial_delay = Duration::ZERO;
        g.polling_interval = Duration::from_secs(1);
        g.batch_size = args.batch_size;
        g.handler_transaction = handler_transaction;
    }
    Ok(config)
}

/// The broker transport of `--transport`, `None` for the in-process default.
async fn transport(args: &Args) -> Result<Option<Arc<dyn Transport>>, BoxError> {
    if args.transport == TransportKind::InProcess {
        return Ok(None);
    }
    let prefix = args
        .broker_prefix
        .clone()
        .ok_or("the broker prefix is chosen before the workers start")?;
    Ok(match args.transport {
        TransportKind::InProcess => None,
        TransportKind::Nats => {
            let mut options = bandeja::nats::NatsOptions {
                prefix,
                partitions: args.partitions,
                ..Default::default()
            };
            if let Some(url) = &args.broker_url {
                options.url.clone_from(url);
            }
            Some(Arc::new(
                bandeja::nats::NatsTransport::connect(options).await?,
            ))
        }
        TransportKind::Amqp => {
            let mut options = bandeja::amqp::AmqpOptions {
                prefix,
                partitions: args.partitions,
                ..Default::default()
            };
            if let Some(url) = &args.broker_url {
                options.url.clone_from(url);
            }
            Some(Arc::new(
                bandeja::amqp::AmqpTransport::connect(options).await?,
            ))
        }
        TransportKind::Redis => {
            let mut options = bandeja::redis::RedisOptions {
                prefix,
                partitions: args.partitions,
                ..Default::default()
            };
            if let Some(url) = &args.broker_url {
                options.url.clone_from(url);
            }
            Some(Arc::new(
                bandeja::redis::RedisTransport::connect(options).await?,
            ))
        }
        TransportKind::Kafka => {
            let servers = args
                .broker_url
                .clone()
                .ok_or("the Kafka brokers are chosen before the workers start")?;
            let options = bandeja::kafka::KafkaOptions::new(servers)
                .prefix(prefix)
                .partitions(args.partitions)
                .create_topics(!args.kafka_mock)
                .broker_creates_topics(args.kafka_mock);
            // The mock cluster answers a fetch only when its wait runs out (real brokers
            // answer as soon as a message arrives): a short wait there, the default on
            // real brokers.
            let fetch_wait = args
                .kafka_fetch_wait_ms
                .or(args.kafka_mock.then_some(5))
                .map(std::time::Duration::from_millis);
            let options = match fetch_wait {
                Some(wait) => options.fetch_wait(wait),
                None => options,
            };
            Some(Arc::new(
                bandeja::kafka::KafkaTransport::connect(options).await?,
            ))
        }
    })
}

async fn start_workers<S: BenchDb>(store: &S, args: &Args) -> Result<Running, BoxError> {
    let effect = Effect {
        store: store.clone(),
        sleep: Duration::from_millis(args.handler_ms),
    };
    let builder = Bandeja::builder(store.clone())
        .config(config(args)?)
        .handler_concurrency(args.concurrency);
    let mut builder = match args.handler_kind() {
        HandlerKind::Message => builder.on_event::<BenchPing, _>("bench", effect),
        HandlerKind::Batch | HandlerKind::Auto => {
            builder.on_event_batch::<BenchPing, _>("bench", effect)
        }
    };
    if let Some(transport) = transport(args).await? {
        builder = builder.service("bench").transport(transport);
    }
    Ok(builder.build()?.start().await?)
}

/// The worker processes of `--processes N` (killed when dropped).
struct Children(Vec<tokio::process::Child>);

fn spawn_children(args: &Args, url: &str, schema: Option<&str>) -> Result<Children, BoxError> {
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for _ in 0..args.processes {
        let mut command = tokio::process::Command::new(&exe);
        command
            .arg("--worker-only")
            .args([
                "--store",
                if args.store == StoreKind::Sqlite {
                    "sqlite"
                } else {
                    "postgres"
                },
            ])
            .args(["--database-url", url])
            .args(["--batch-size", &args.batch_size.to_string()])
            .args(["--concurrency", &args.concurrency.to_string()])
            .args(["--handler-ms", &args.handler_ms.to_string()])
            .args(["--handler", args.handler_kind().name()])
            .args(["--handler-transaction", &args.handler_transaction])
            .args(["--transport", args.transport.name()])
            .args(["--partitions", &args.partitions.to_string()])
            .kill_on_drop(true);
        if let Some(prefix) = &args.broker_prefix {
            command.args(["--broker-prefix", prefix]);
        }
        if let Some(url) = &args.broker_url {
            command.args(["--broker-url", url]);
        }
        if args.kafka_mock {
            command.arg("--kafka-mock");
        }
        if let Some(wait) = args.kafka_fetch_wait_ms {
            command.args(["--kafka-fetch-wait-ms", &wait.to_string()]);
        }
        if let Some(schema) = schema {
            command.args(["--schema", schema]);
        }
        children.push(command.spawn()?);
    }
    Ok(Children(children))
}

enum Workers {
    Here(Running),
    Children(Children),
}

async fn workers<S: BenchDb>(
    store: &S,
    args: &Args,
    url: &str,
    schema: Option<&str>,
) -> Result<Workers, BoxError> {
    if args.processes <= 1 {
        Ok(Workers::Here(start_workers(store, args).await?))
    } else {
        Ok(Workers::Children(spawn_children(args, url, schema)?))
    }
}

async fn stop(workers: Workers) {
    match workers {
        Workers::Here(running) => running.shutdown().await,
        Workers::Children(mut children) => {
            for child in &mut children.0 {
                let _ = child.kill().await;
            }
        }
    }
}

async fn go<S: BenchDb>(
    store: S,
    args: &Args,
    url: &str,
    schema: Option<&str>,
) -> Result<(), BoxError> {
    store.migrate().await?;
    store.create_effects().await?;
    if !args.worker_only {
        // A reused `--schema` starts every run from zero handled messages.
        store.clear_effects().await?;
    }
    if args.history > 0 && !args.worker_only {
        eprintln!("seeding {} COMPLETED rows into each box...", args.history);
        store.seed_history(args.history).await?;
    }
    if args.worker_only {
        let running = start_workers(&store, args).await?;
        let _ = tokio::signal::ctrl_c().await;
        running.shutdown().await;
        return Ok(());
    }
    match args.mode {
        Mode::Drain => drain(&store, args, url, schema).await,
        Mode::Live => live(&store, args, url, schema).await,
    }
}

fn ping(n: u64, keys: u64) -> Result<MessageRecord, BoxError> {
    let event = Event::new(
        "Bench",
        format!("key-{}", n % keys.max(1)),
        BenchPing {
            n,
            emitted_us: now_us(),
        },
    );
    Ok(MessageRecord::from_event(&event)?)
}

async fn wait_for<S: BenchDb>(store: &S, target: i64, limit: Duration) -> Result<(), BoxError> {
    // Polled every 10 ms: whether any outbox or inbox row is still live (a partial-index
    // probe, cheap at any size). Counting the handled rows costs a scan of the effects
    // table, so it happens only for the progress line and once the boxes look empty —
    // the observer must not steal the database's time from the drain it measures.
    let start = Instant::now();
    let mut last = (Instant::now(), 0i64);
    loop {
        if !store.live_rows_left().await? {
            let done = store.effects().await?;
            if done >= target {
                return Ok(());
            }
            // Nothing live and messages missing: they ended FAILED, waiting is in vain.
            let retries = store.inbox_retries().await?;
            if retries.failed > 0 && !store.live_rows_left().await? {
                let done = store.effects().await?;
                return Err(format!(
                    "only {done} of {target} messages handled: {} FAILED \
                     ({} rows retried, max retry_count {})",
                    retries.failed, retries.retried, retries.max_retry_count
                )
                .into());
            }
        }
        if start.elapsed() > limit {
            let done = store.effects().await?;
            return Err(format!("only {done} of {target} messages handled after {limit:?}").into());
        }
        if last.0.elapsed() >= Duration::from_secs(5) {
            let done = store.effects().await?;
            let rate = (done - last.1) as f64 / last.0.elapsed().as_secs_f64();
            eprintln!(
                "  t={:.0}s handled={done}/{target} rate={rate:.0}/s",
                start.elapsed().as_secs_f64()
            );
            last = (Instant::now(), done);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Peak resident memory (VmHWM) of a process, in MB.
fn peak_rss_mb(pid: Option<u32>) -> f64 {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_owned(),
    };
    std::fs::read_to_string(path)
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Peak resident memory of the worker processes (this one, or the children).
fn workers_rss_mb(workers: &Workers) -> f64 {
    match workers {
        Workers::Here(_) => peak_rss_mb(None),
        Workers::Children(children) => children
            .0
            .iter()
            .filter_map(tokio::process::Child::id)
            .map(|pid| peak_rss_mb(Some(pid)))
            .fold(0.0, f64::max),
    }
}

/// The closing JSON line.
#[allow(clippy::too_many_arguments)]
fn report(
    args: &Args,
    mode: &str,
    messages: u64,
    seconds: f64,
    latencies: &mut [i64],
    rss: f64,
    extra: serde_json::Value,
) {
    latencies.sort_unstable();
    // Over the sorted latencies, in milliseconds.
    let pick = |percent: usize| -> f64 {
        nearest_rank(latencies, percent).unwrap_or_default() as f64 / 1000.0
    };
    let mut line = serde_json::json!({
        "store": format!("{:?}", args.store).to_lowercase(),
        "transport": args.transport.name(),
        "mode": mode,
        "messages": messages,
        "processes": args.processes.max(1),
        "handler": args.handler_kind().name(),
        "handler_ms": args.handler_ms,
        "handler_concurrency": args.concurrency,
        "seconds": seconds,
        "throughput_per_s": messages as f64 / seconds,
        "latency_p50_ms": pick(50),
        "latency_p99_ms": pick(99),
        "max_rss_mb": rss,
    });
    if let (Some(line), serde_json::Value::Object(extra)) = (line.as_object_mut(), extra) {
        line.extend(extra);
    }
    println!("{line}");
}

/// The nearest-rank `percent` percentile of `sorted` (ascending), `None` when it is empty.
pub(crate) fn nearest_rank<T: Copy>(sorted: &[T], percent: usize) -> Option<T> {
    let index = (sorted.len().saturating_sub(1) * percent).div_ceil(100);
    sorted.get(index).copied()
}

/// With a simulated handler time: what the worker processes could drain at most, every
/// handler slot of every process busy all the time (processes × handler concurrency /
/// handler time), in messages per second. `None` with `--handler-ms 0`.
fn ideal_per_s(args: &Args) -> Option<f64> {
    (args.handler_ms > 0).then(|| {
        f64::from(args.processes.max(1)) * args.concurrency as f64 * 1000.0 / args.handler_ms as f64
    })
}

const DEFAULT_NATS: &str = "nats://127.0.0.1:4222";

/// Before a NATS run: the JetStream account's state (what the figure depends on).
async fn broker_before(args: &Args) -> Result<serde_json::Value, BoxError> {
    if args.transport != TransportKind::Nats {
        return Ok(serde_json::json!({}));
    }
    crate::broker::nats_state(args.broker_url.as_deref().unwrap_or(DEFAULT_NATS)).await
}

/// After a NATS run with a generated prefix: its streams deleted.
async fn broker_after(args: &Args) -> Result<(), BoxError> {
    if !args.generated_prefix {
        return Ok(());
    }
    if args.transport == TransportKind::Redis {
        let prefix = args.broker_prefix.as_deref().unwrap_or_default();
        crate::broker::redis_delete_streams(
            args.broker_url
                .as_deref()
                .unwrap_or(bandeja::redis::DEFAULT_URL),
            prefix,
        )
        .await?;
        return Ok(());
    }
    if args.transport != TransportKind::Nats {
        return Ok(());
    }
    let prefix = args.broker_prefix.as_deref().unwrap_or_default();
    crate::broker::nats_delete_streams(args.broker_url.as_deref().unwrap_or(DEFAULT_NATS), prefix)
        .await?;
    Ok(())
}

/// `extra` with the fields of `more` added.
fn merged(mut extra: serde_json::Value, more: serde_json::Value) -> serde_json::Value {
    if let (Some(extra), serde_json::Value::Object(more)) = (extra.as_object_mut(), more) {
        extra.extend(more);
    }
    extra
}

async fn drain<S: BenchDb>(
    store: &S,
    args: &Args,
    url: &str,
    schema: Option<&str>,
) -> Result<(), BoxError> {
    eprintln!("emitting {} messages into the outbox...", args.messages);
    let outbox = Bandeja::builder(store.clone()).build()?.outbox();
    let mut n = 0;
    while n < args.messages {
        let end = (n + 1000).min(args.messages);
        let records = (n..end)
            .map(|i| ping(i, args.keys))
            .collect::<Result<Vec<_>, _>>()?;
        let mut tx = store.begin().await?;
        outbox.emit_records(&mut *tx, records).await?;
        store.commit(tx).await?;
        n = end;
    }
    eprintln!(
        "draining with {} worker process(es), handler concurrency {} each, {} handler of {} ms...",
        args.processes.max(1),
        args.concurrency,
        args.handler_kind().name(),
        args.handler_ms
    );
    let broker = broker_before(args).await?;
    let starting = Instant::now();
    let workers = workers(store, args, url, schema).await?;
    // One process: the clock starts once its service is started, since it claims nothing
    // before (with a broker, its subscriptions are set up first: a new Kafka group's first
    // assignment waits for the brokers' `group.initial.rebalance.delay.ms`, 3 s by
    // default); that start is reported apart, as `start_seconds`. Several processes: the
    // clock runs from their spawn (each starts claiming on its own).
    let start_seconds = starting.elapsed().as_secs_f64();
    let started = if args.processes <= 1 {
        Instant::now()
    } else {
        starting
    };
    let target = i64::try_from(args.messages)?;
    let result = wait_for(store, target, Duration::from_secs(3600)).await;
    let seconds = started.elapsed().as_secs_f64();
    let rss = workers_rss_mb(&workers);
    stop(workers).await;
    // The streams go even when the run failed; the run's own error comes first.
    let cleaned = broker_after(args).await;
    result?;
    cleaned?;
    let mut latencies = store.latencies().await?;
    let retries = store.inbox_retries().await?;
    let mut extra = serde_json::json!({
        "start_seconds": start_seconds,
        "history": args.history,
        "retried_rows": retries.retried,
        "max_retry_count": retries.max_retry_count,
        "failed_rows": retries.failed,
    });
    extra = merged(extra, broker);
    if let (Some(ideal), Some(extra)) = (ideal_per_s(args), extra.as_object_mut()) {
        extra.insert("ideal_per_s".into(), ideal.into());
        extra.insert(
            "ratio_to_ideal".into(),
            (args.messages as f64 / seconds / ideal).into(),
        );
    }
    report(
        args,
        "drain",
        args.messages,
        seconds,
        &mut latencies,
        rss,
        extra,
    );
    Ok(())
}

/// How long a live run lets the started workers settle before it emits.
const SETTLE: Duration = Duration::from_secs(1);

async fn live<S: BenchDb>(
    store: &S,
    args: &Args,
    url: &str,
    schema: Option<&str>,
) -> Result<(), BoxError> {
    let broker = broker_before(args).await?;
    crate::completed::install();
    let workers = workers(store, args, url, schema).await?;
    // Emission starts a second after the workers, as graphile-worker's `trickle` starts
    // adding jobs a second after its worker: what is measured is the running system's
    // latency, not its start (the first claims' planning, the pools' first connections).
    // With `--processes` above 1 the second counts from spawning the worker processes,
    // which may still be starting when it ends.
    tokio::time::sleep(SETTLE).await;
    let emitters = 4u64;
    let per_emitter = Duration::from_secs_f64(emitters as f64 / args.rate.max(1) as f64);
    let total = args.rate * args.seconds;
    eprintln!(
        "emitting {total} messages at {}/s, one transaction each...",
        args.rate
    );
    // The emitters take turns, one emission every `1 / rate` seconds (as graphile-worker's
    // `trickle` adds its jobs): emitter `e` starts `e / rate` after the first, so the
    // emissions do not arrive in bursts of `emitters` at once.
    let first = tokio::time::Instant::now();
    let started = first.into_std();
    let mut tasks = Vec::new();
    for e in 0..emitters {
        let store = store.clone();
        let keys = args.keys;
        let offset = per_emitter.mul_f64(e as f64 / emitters as f64);
        tasks.push(tokio::spawn(async move {
            let outbox = Bandeja::builder(store.clone()).build()?.outbox();
            let mut ticker = tokio::time::interval_at(first + offset, per_emitter);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let mut n = e;
            while n < total {
                ticker.tick().await;
                let mut tx = store.begin().await?;
                outbox.emit_records(&mut *tx, vec![ping(n, keys)?]).await?;
                store.commit(tx).await?;
                n += emitters;
            }
            Ok::<(), BoxError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let emit_seconds = started.elapsed().as_secs_f64();
    let result = wait_for(store, i64::try_from(total)?, Duration::from_secs(120)).await;
    let seconds = started.elapsed().as_secs_f64();
    let rss = workers_rss_mb(&workers);
    stop(workers).await;
    // The streams go even when the run failed; the run's own error comes first.
    let cleaned = broker_after(args).await;
    result?;
    cleaned?;
    let mut latencies = store.latencies().await?;
    let extra = merged(
        merged(
            serde_json::json!({"rate": args.rate, "achieved_rate": total as f64 / emit_seconds}),
            crate::completed::fields(crate::completed::take_ms()),
        ),
        broker,
    );
    report(args, "live", total, seconds, &mut latencies, rss, extra);
    Ok(())
}
