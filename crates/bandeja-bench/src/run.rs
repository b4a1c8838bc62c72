//! Sets up the store, runs the chosen mode, prints the figures.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use bandeja::postgres::PgStore;
use bandeja::sqlite::SqliteStore;
use bandeja::{Bandeja, Config, Event, Group, HandlerTransaction, MessageRecord, Running};

use crate::args::{Args, Mode, StoreKind};
use crate::db::{BenchDb, BoxError, OutboxHandle};
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
            let store = PgStore::connect_with_schema(&url, &schema).await?;
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
    for group in Group::ALL {
        let g = config.group_mut(group);
        g.polling_initial_delay = Duration::ZERO;
        g.polling_interval = Duration::from_secs(1);
        g.batch_size = args.batch_size;
        g.handler_transaction = handler_transaction;
    }
    Ok(config)
}

async fn start_workers<S: BenchDb>(store: &S, args: &Args) -> Result<Running, BoxError> {
    let bandeja = Bandeja::builder(store.clone())
        .config(config(args)?)
        .handler_concurrency(args.concurrency)
        .on_event_batch::<BenchPing, _>("bench", Effect(store.clone(), PhantomData))
        .build()?;
    Ok(bandeja.start().await?)
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
            .args(["--handler-transaction", &args.handler_transaction])
            .kill_on_drop(true);
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
    let start = Instant::now();
    let mut last_report = Instant::now();
    loop {
        let done = store.effects().await?;
        if done >= target {
            return Ok(());
        }
        if start.elapsed() > limit {
            return Err(format!("only {done} of {target} messages handled after {limit:?}").into());
        }
        if last_report.elapsed() > Duration::from_secs(5) {
            eprintln!(
                "  {done}/{target} handled after {:.1}s",
                start.elapsed().as_secs_f64()
            );
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn drain<S: BenchDb>(
    store: &S,
    args: &Args,
    url: &str,
    schema: Option<&str>,
) -> Result<(), BoxError> {
    eprintln!("emitting {} messages into the outbox...", args.messages);
    let outbox = store.outbox_handle();
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
        "draining with {} worker process(es)...",
        args.processes.max(1)
    );
    let started = Instant::now();
    let workers = workers(store, args, url, schema).await?;
    let target = i64::try_from(args.messages)?;
    let result = wait_for(store, target, Duration::from_secs(3600)).await;
    let seconds = started.elapsed().as_secs_f64();
    stop(workers).await;
    result?;
    let report = serde_json::json!({
        "mode": "drain", "store": format!("{:?}", args.store).to_lowercase(), "transport": "in-process",
        "processes": args.processes.max(1), "messages": args.messages, "seconds": seconds,
        "messages_per_second": args.messages as f64 / seconds,
    });
    println!("{report}");
    Ok(())
}

async fn live<S: BenchDb>(
    store: &S,
    args: &Args,
    url: &str,
    schema: Option<&str>,
) -> Result<(), BoxError> {
    let workers = workers(store, args, url, schema).await?;
    let emitters = 4u64;
    let per_emitter = Duration::from_secs_f64(emitters as f64 / args.rate.max(1) as f64);
    let total = args.rate * args.seconds;
    eprintln!(
        "emitting {total} messages at {}/s, one transaction each...",
        args.rate
    );
    let started = Instant::now();
    let mut tasks = Vec::new();
    for e in 0..emitters {
        let store = store.clone();
        let keys = args.keys;
        tasks.push(tokio::spawn(async move {
            let outbox = store.outbox_handle();
            let mut ticker = tokio::time::interval(per_emitter);
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
    stop(workers).await;
    result?;
    let mut latencies = store.latencies().await?;
    latencies.sort_unstable();
    // Nearest-rank percentile over the sorted latencies, in milliseconds.
    let pick = |percent: usize| -> f64 {
        let index = (latencies.len().saturating_sub(1) * percent).div_ceil(100);
        latencies.get(index).copied().unwrap_or_default() as f64 / 1000.0
    };
    let report = serde_json::json!({
        "mode": "live", "store": format!("{:?}", args.store).to_lowercase(), "transport": "in-process",
        "processes": args.processes.max(1), "rate": args.rate, "messages": total,
        "achieved_rate": total as f64 / emit_seconds,
        "p50_ms": pick(50), "p90_ms": pick(90), "p99_ms": pick(99), "max_ms": pick(100),
    });
    println!("{report}");
    Ok(())
}
