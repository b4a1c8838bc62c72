//! The chaos harness: a workload driven through real `scale-worker` processes on one
//! PostgreSQL schema while they are SIGKILLed at random moments (and restarted, sometimes
//! with a named crash point armed), PostgreSQL is restarted and the broker is killed and
//! brought back; at the end the database alone says whether the contract held (see
//! [`Verification`]). The `chaos` binary runs one [`Plan`]; the `chaos_*` tests run bounded
//! plans in CI.
//!
//! A run: a fresh schema `chaos_<random>`; `--workers` processes; the run itself emits the
//! messages as an application would (a batch per transaction, paced), while the kills are
//! spread over the emission's span; each kill is followed by a watch of the rows the dead
//! worker held, which measures the takeover; then the run waits for everything to be
//! handled, stops the workers with SIGTERM, and verifies. A worker that cannot start (its
//! database or broker is down) is tried again every 2 s, and the schedule waits for it.
//! Over NATS or Redis, the workers may reach the broker through a proxy that partitions
//! them (connections open, no byte moving) for a while, and the run's own broker may be
//! SIGKILLed and started again. Over Kafka, the workers reach the run's own brokers
//! directly: librdkafka's mock cluster in a `kafka-mock` process, whose brokers an outage
//! takes down and brings back, or a `tansu` broker, which keeps its topics in memory and is
//! never killed.

mod broker;
mod emitter;
mod faults;
mod fleet;
pub mod plan;
mod proxy;
mod report;
mod sampler;
mod takeover;
mod verify;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bandeja::postgres::{PgStore, PgStoreOptions};
use bandeja::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use tokio::sync::watch;

pub use emitter::Emission;
pub use faults::Outage;
pub use fleet::Exit;
pub use plan::{KafkaBrokers, Plan, TransportKind};
pub use report::Report;
pub use sampler::{Sample, Samples};
pub use takeover::Takeover;
pub use verify::Verification;

use crate::kafka_mock::KafkaMock;
use crate::nats_server::NatsServer;
use crate::redis_server::RedisServer;
use crate::tansu_server::TansuServer;
pub(crate) use broker::OwnBroker;
use broker::{kafka_mock_bin, worker_bin};
use fleet::Fleet;

/// How often the run checks on its workers and its schedule.
const TICK: Duration = Duration::from_millis(50);
/// How often it counts the live rows while waiting for the end.
const DRAIN_CHECK_EVERY: Duration = Duration::from_millis(500);
/// Slack of the takeover bound over `lock-at-most-for`: one polling interval of the
/// workers (200 ms, see [`crate::worker_config`]) and the watch's own scheduling.
const TAKEOVER_SLACK: Duration = Duration::from_millis(1_000);

/// Crash points a worker can reach, for the transport.
fn crash_points(transport: TransportKind) -> &'static [&'static str] {
    match transport {
        TransportKind::InProcess => &["after-claim", "inside-handler", "after-handler-commit"],
        TransportKind::Nats | TransportKind::Redis | TransportKind::Kafka => &[
            "after-claim",
            "after-publish-before-mark",
            "after-inbox-insert-before-ack",
            "inside-handler",
            "after-handler-commit",
        ],
    }
}

/// Whole milliseconds of `d` (saturating), as the reports count time.
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The live rows of both boxes, and (when there are none) whether every message has its
/// inbox rows: the run is over when this is `(0, true)`.
async fn drained(pool: &PgPool, schema: &str, inbox_rows: u64) -> Result<bool, sqlx::Error> {
    let live: i64 = sqlx::query_scalar(&format!(
        "SELECT (SELECT count(*) FROM \"{schema}\".outbox_events \
                   WHERE status IN ('PENDING', 'PROCESSING')) \
              + (SELECT count(*) FROM \"{schema}\".inbox_events \
                   WHERE status IN ('PENDING', 'PROCESSING'))"
    ))
    .fetch_one(pool)
    .await?;
    if live > 0 {
        return Ok(false);
    }
    let total: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM \"{schema}\".inbox_events"))
        .fetch_one(pool)
        .await?;
    Ok(u64::try_from(total).is_ok_and(|t| t >= inbox_rows))
}

/// The socket address of a `nats://host:port` or `redis://host:port` URL (the first, if
/// several).
fn upstream_of(url: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let first = url.split(',').next().unwrap_or_default().trim();
    let host_port = first
        .strip_prefix("nats://")
        .or_else(|| first.strip_prefix("redis://"))
        .unwrap_or(first);
    host_port
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| format!("cannot resolve the broker address {first}"))
}

/// Creates and migrates the run's schema with the effect tables; the store returned is the
/// one the run emits through.
async fn prepare(plan: &Plan, schema: &str) -> Result<PgStore, String> {
    let options = PgStoreOptions {
        acquire_timeout: plan::secs(plan.emit_acquire_timeout),
        ..PgStoreOptions::with_schema(schema)
    };
    let store = PgStore::connect_with_options(&plan.database_url, &options)
        .await
        .map_err(|e| format!("cannot reach PostgreSQL at {}: {e}", plan.database_url))?;
    store
        .migrate()
        .await
        .map_err(|e| format!("migrate {schema}: {e}"))?;
    crate::create_tables(store.pool(), schema)
        .await
        .map_err(|e| format!("create the effect tables in {schema}: {e}"))?;
    Ok(store)
}

/// Drops the run's schema.
async fn drop_schema(pool: &PgPool, schema: &str) -> Result<(), sqlx::Error> {
    sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .execute(pool)
        .await
        .map(|_| ())
}

/// Runs `plan`; the report says whether the contract held. An `Err` is a run that could
/// not be carried out (PostgreSQL unreachable at the start, a worker that never starts).
pub async fn run(plan: &Plan) -> Result<Report, String> {
    plan.check()?;
    let schema = format!("chaos_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let outcome = run_in(plan, &schema).await;
    if outcome.is_err() && !plan.keep_schema {
        // A run that could not be made leaves nothing worth inspecting behind.
        if let Ok(pool) = PgPoolOptions::new()
            .max_connections(1)
            .connect(&plan.database_url)
            .await
        {
            let _ = drop_schema(&pool, &schema).await;
        }
    }
    outcome.map_err(|e| format!("{e} (schema {schema})"))
}

/// [`run`] in `schema`.
async fn run_in(plan: &Plan, schema: &str) -> Result<Report, String> {
    let seed = plan.seed.unwrap_or_else(rand::random);
    let mut rng = StdRng::seed_from_u64(seed);
    let schema = schema.to_owned();
    let store = prepare(plan, &schema).await?;
    let monitor = PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&plan.database_url)
        .await
        .map_err(|e| format!("cannot reach PostgreSQL: {e}"))?;

    let kafka_brokers = (plan.transport == TransportKind::Kafka).then_some(plan.kafka_brokers);
    let mut broker = match (plan.transport, &plan.nats_url) {
        (TransportKind::Nats, None) => Some(OwnBroker::Nats(NatsServer::start()?)),
        (TransportKind::Redis, _) => Some(OwnBroker::Redis(RedisServer::start()?)),
        (TransportKind::Kafka, _) if kafka_brokers == Some(KafkaBrokers::Mock) => Some(
            OwnBroker::KafkaMock(KafkaMock::start(&kafka_mock_bin(plan)?)?),
        ),
        _ => None,
    };
    // Beside `broker`, as no outage ever takes it: its topics live in its memory.
    let tansu = match kafka_brokers {
        Some(KafkaBrokers::Tansu) => Some(TansuServer::start()?),
        _ => None,
    };
    let mut args = vec![
        "--database-url".to_owned(),
        plan.database_url.clone(),
        "--schema".to_owned(),
        schema.clone(),
        "--lease".to_owned(),
        plan.lease.to_string(),
        "--fail-rate".to_owned(),
        plan.fail_rate.to_string(),
        "--handler-ms".to_owned(),
        plan.handler_ms.to_string(),
    ];
    let mut proxy = None;
    if plan.transport != TransportKind::InProcess {
        let scheme = match plan.transport {
            TransportKind::Redis => "redis",
            TransportKind::Kafka => "kafka",
            _ => "nats",
        };
        let mut url = plan
            .nats_url
            .clone()
            .filter(|_| plan.transport == TransportKind::Nats)
            .or_else(|| broker.as_ref().map(OwnBroker::url))
            .or_else(|| tansu.as_ref().map(TansuServer::bootstrap_servers))
            .unwrap_or_default();
        if plan.broker_partition_at.is_some() {
            let upstream = upstream_of(&url)?;
            let started = proxy::PartitionProxy::start(upstream)
                .await
                .map_err(|e| format!("cannot start the partition proxy: {e}"))?;
            url = format!("{scheme}://127.0.0.1:{}", started.port());
            proxy = Some(Arc::new(started));
        }
        args.extend([
            format!("--{scheme}"),
            url,
            "--nats-prefix".to_owned(),
            format!("chaos{}", &schema[6..14]),
        ]);
        if kafka_brokers == Some(KafkaBrokers::Mock) {
            // The mock does not answer CreateTopics: it makes a topic when asked for it.
            args.push("--kafka-topics-by-brokers".to_owned());
        }
    }
    let mut fleet = Fleet::start(worker_bin(plan)?, args, plan.workers).await?;
    let watched: sampler::Watched = Arc::new(Mutex::new(fleet.pids()));
    let (stop, stopped) = watch::channel(false);
    let sampling = tokio::spawn(sampler::run(
        monitor.clone(),
        schema.clone(),
        watched.clone(),
        plan::secs(plan.sample_every),
        stopped,
    ));

    let started = Instant::now();
    let emission = {
        let (store, plan) = (store.clone(), plan.clone());
        tokio::spawn(async move { emitter::emit(&store, &plan).await })
    };
    let database_restart = plan.restart_database_at.map(|at| {
        tokio::spawn(faults::restart_database(
            plan.database_url.clone(),
            (
                plan.database_stop_command.clone(),
                plan.database_start_command.clone(),
            ),
            plan::secs(plan.database_down_for),
            started + plan::secs(at),
            started,
        ))
    });
    let broker_outage = match plan.broker_outage_at {
        Some(at) => {
            let server = broker
                .take()
                .ok_or("--broker-outage-at needs a broker of the run's own")?;
            let (at, down) = (started + plan::secs(at), plan::secs(plan.broker_outage));
            Some(tokio::task::spawn_blocking(move || {
                faults::broker_outage(server, at, down, started)
            }))
        }
        None => None,
    };

    let broker_partition = match (plan.broker_partition_at, &proxy) {
        (Some(at), Some(proxy)) => Some(tokio::spawn(faults::broker_partition(
            proxy.clone(),
            started + plan::secs(at),
            plan::secs(plan.broker_partition),
            started,
        ))),
        _ => None,
    };

    // Kill moments: one in each of `kills` equal slices of the emission's span.
    let span = plan.emission_span();
    let kills = plan.kills;
    let kill_at: Vec<Duration> = (0..kills)
        .map(|i| span.mul_f64((f64::from(i) + rng.gen::<f64>()) / f64::from(kills.max(1))))
        .collect();
    let takeover_timeout = plan.lease() * 2 + Duration::from_secs(30);

    let mut report = Report::new(plan, seed, &schema);
    let mut watches = Vec::new();
    let mut next_kill = 0;
    let mut emitted: Option<Emission> = None;
    let mut emission = Some(emission);
    let mut emission_ended: Option<Instant> = None;
    let mut last_drain_check = Instant::now();
    loop {
        for (slot, exit) in fleet.exited() {
            eprintln!("chaos: {} ended by itself ({})", exit.worker, exit.status);
            if exit.armed.is_some() {
                report.crash_point_exits.push(exit);
            } else {
                report.unexpected_exits.push(exit);
            }
            fleet.restart(slot, None).await?;
            *watched.lock().map_err(|_| "sampler poisoned")? = fleet.pids();
        }
        if next_kill < kill_at.len() && started.elapsed() >= kill_at[next_kill] {
            next_kill += 1;
            let slot = rng.gen_range(0..fleet.len());
            let killed_at = Instant::now();
            let worker = fleet.kill(slot);
            watches.push(tokio::spawn(takeover::watch(
                monitor.clone(),
                schema.clone(),
                worker,
                killed_at,
                ms(killed_at - started),
                takeover_timeout,
            )));
            let points = crash_points(plan.transport);
            let armed = (plan.crash_points && rng.gen_bool(0.5)).then(|| {
                let point = points[rng.gen_range(0..points.len())];
                format!("{point}@{}", rng.gen_range(1..=20))
            });
            fleet.restart(slot, armed).await?;
            *watched.lock().map_err(|_| "sampler poisoned")? = fleet.pids();
        }
        if emission
            .as_ref()
            .is_some_and(tokio::task::JoinHandle::is_finished)
        {
            if let Some(handle) = emission.take() {
                let done = handle.await.map_err(|e| format!("emission task: {e}"))??;
                eprintln!(
                    "chaos: {} messages emitted in {} ms",
                    done.committed, done.took_ms
                );
                // The emitter's own clock: this loop may notice late (a restart in hand).
                emission_ended = Some(started + Duration::from_millis(done.took_ms));
                emitted = Some(done);
            }
        }
        if let (Some(done), Some(ended)) = (&emitted, emission_ended) {
            if next_kill >= kill_at.len() && last_drain_check.elapsed() >= DRAIN_CHECK_EVERY {
                last_drain_check = Instant::now();
                let rows = done.committed * crate::SUBSCRIBERS.len() as u64;
                if drained(&monitor, &schema, rows).await.unwrap_or(false) {
                    break;
                }
                if ended.elapsed() >= plan::secs(plan.drain_timeout) {
                    report.failures.push(format!(
                        "not everything was handled {} s after emission ended",
                        plan.drain_timeout
                    ));
                    break;
                }
            }
        }
        tokio::time::sleep(TICK).await;
    }
    report.drained_after_emission_ms = emission_ended.map_or(0, |e| ms(e.elapsed()));
    report.took_ms = ms(started.elapsed());
    let _ = stop.send(true);
    for exit in fleet.terminate(Duration::from_secs(30)).await {
        // An armed worker may reach its crash point while it stops (a last claim after the
        // drain was seen): that abort is the run's own fault, as it is mid-run.
        if exit.is_crash_point_abort() {
            report.crash_point_exits.push(exit);
        } else {
            report.unclean_stops.push(exit);
        }
    }
    for handle in watches {
        report
            .kills
            .push(handle.await.map_err(|e| format!("takeover watch: {e}"))?);
    }
    if let Some(handle) = database_restart {
        report.database_restart = Some(handle.await.map_err(|e| format!("restart task: {e}"))??);
    }
    if let Some(handle) = broker_outage {
        let (server, outage) = handle.await.map_err(|e| format!("outage task: {e}"))?;
        report.broker_outage = Some(outage?);
        drop(server);
    }
    if let Some(handle) = broker_partition {
        report.broker_partition = Some(handle.await.map_err(|e| format!("partition task: {e}"))?);
    }
    drop(proxy);
    drop(broker);
    drop(tansu);
    report.samples = sampling.await.map_err(|e| format!("sampler: {e}"))?;
    let emission = emitted.unwrap_or_default();
    report.verification = verify::verify(&monitor, &schema, emission.committed, emission.poison)
        .await
        .map_err(|e| format!("verification queries failed: {e}"))?;
    report.emission = emission;
    report.judge(plan.lease() + TAKEOVER_SLACK, plan.max_rss_mib);
    if report.passed() && !plan.keep_schema {
        drop(store);
        drop_schema(&monitor, &schema)
            .await
            .map_err(|e| format!("drop schema {schema}: {e}"))?;
    }
    Ok(report)
}
