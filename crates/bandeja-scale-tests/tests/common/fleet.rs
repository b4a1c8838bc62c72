//! The mixed-fleet tests' machinery: a fresh database on PostgreSQL (a schema of its own)
//! or SQLite (a file of its own, the runs in a second file), `fleet-node` processes, a
//! sampler of who holds which inbox rows, and the verdict read from the database: which
//! message reached which subscriber, how many times a handler ran for it, and what is not
//! COMPLETED.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bandeja::sqlite::SqliteStore;
use bandeja::testing::eventually;
use bandeja::{MessageKind, Store};
use bandeja_conformance::fixtures::TempDir;
use bandeja_scale_tests::fleet;
use sqlx::postgres::PgRow;
use sqlx::sqlite::{SqlitePool, SqliteRow};
use sqlx::{FromRow, PgPool};

use super::pair::Service;
use super::{database_url, try_fresh, Fresh};

/// The `fleet-node` executable built with the tests.
pub(crate) const NODE: &str = env!("CARGO_BIN_EXE_fleet-node");

/// How often the waits and the sampler read the database.
const READ_EVERY: Duration = Duration::from_millis(250);

/// A pool of the tests' own, on either store.
#[derive(Clone)]
pub(crate) enum Pool {
    Pg(PgPool),
    Sqlite(SqlitePool),
}

impl Pool {
    /// The rows of `sql`; panics with the statement on error.
    pub(crate) async fn fetch<T>(&self, sql: &str) -> Vec<T>
    where
        T: Send + Unpin + for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, SqliteRow>,
    {
        self.try_fetch(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The rows of `sql`.
    async fn try_fetch<T>(&self, sql: &str) -> Result<Vec<T>, sqlx::Error>
    where
        T: Send + Unpin + for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, SqliteRow>,
    {
        match self {
            Pool::Pg(pool) => sqlx::query_as(sql).fetch_all(pool).await,
            Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_all(pool).await,
        }
    }
}

/// What keeps a test's database alive until the test ends.
enum Keep {
    Pg(Fresh),
    Sqlite(TempDir),
}

/// A test's database: migrated boxes plus `fleet_effects` and `fleet_runs`.
pub(crate) struct FleetDb {
    /// The boxes and `fleet_effects`.
    pub(crate) boxes: Pool,
    /// `fleet_runs`.
    pub(crate) runs: Pool,
    /// What table names are prefixed with in SQL (`"schema".` or nothing).
    prefix: String,
    /// The `fleet-node` flags that name this store.
    store_args: Vec<String>,
    _keep: Keep,
}

impl FleetDb {
    /// A fresh PostgreSQL schema; `None` (after a notice) when PostgreSQL is down outside
    /// CI, a panic in CI.
    pub(crate) async fn postgres() -> Option<FleetDb> {
        let fresh = try_fresh().await?;
        let schema = fresh.schema().to_owned();
        fleet::create_pg_tables(fresh.pool(), &schema)
            .await
            .expect("create the fleet tables");
        let pool = fresh.pool().clone();
        Some(FleetDb {
            boxes: Pool::Pg(pool.clone()),
            runs: Pool::Pg(pool),
            prefix: format!("\"{schema}\"."),
            store_args: strings(&[
                "--store",
                "postgres",
                "--database-url",
                &database_url(),
                "--schema",
                &schema,
            ]),
            _keep: Keep::Pg(fresh),
        })
    }

    /// A fresh SQLite file (and a runs file) in a directory of its own.
    pub(crate) async fn sqlite() -> FleetDb {
        let keep = TempDir::new("bandeja-fleet");
        let url = keep.sqlite_url("boxes.db");
        let runs_url = keep.sqlite_url("runs.db");
        let store = SqliteStore::connect(&url).await.expect("open SQLite");
        store.migrate().await.expect("migrate");
        fleet::create_sqlite_effects(store.pool())
            .await
            .expect("create fleet_effects");
        let runs = fleet::open_sqlite_runs(&runs_url)
            .await
            .expect("open the runs file");
        FleetDb {
            boxes: Pool::Sqlite(store.pool().clone()),
            runs: Pool::Sqlite(runs),
            prefix: String::new(),
            store_args: strings(&[
                "--store",
                "sqlite",
                "--database-url",
                &url,
                "--runs-url",
                &runs_url,
            ]),
            _keep: Keep::Sqlite(keep),
        }
    }

    /// `template` with every `{s}` replaced by the table prefix.
    pub(crate) fn sql(&self, template: &str) -> String {
        template.replace("{s}", &self.prefix)
    }

    /// The rows of the boxes' query `template`.
    pub(crate) async fn rows<T>(&self, template: &str) -> Vec<T>
    where
        T: Send + Unpin + for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, SqliteRow>,
    {
        self.boxes.fetch(&self.sql(template)).await
    }

    /// The count of the boxes' query `template` (`SELECT count(*) …`).
    pub(crate) async fn count(&self, template: &str) -> i64 {
        let rows: Vec<(i64,)> = self.rows(template).await;
        rows.first().map_or(0, |row| row.0)
    }

    /// Waits (at most `timeout`) until the count of `template` reaches `target`; panics
    /// with the last count otherwise.
    pub(crate) async fn wait_count(&self, template: &str, target: i64, timeout: Duration) {
        let reached = eventually(timeout, || async {
            (self.count(template).await >= target).then_some(())
        })
        .await;
        if reached.is_err() {
            let count = self.count(template).await;
            panic!("{template}: {count} after {timeout:?}, expected {target}");
        }
    }

    /// The `fleet-node` flags of this store.
    pub(crate) fn store_args(&self) -> Vec<String> {
        self.store_args.clone()
    }

    /// Every outbox row, of both kinds.
    pub(crate) async fn outbox(&self) -> Vec<Outboxed> {
        let rows: Vec<(String, String, String)> = self
            .rows(
                "SELECT CAST(id AS TEXT), message_type, status FROM {s}outbox_events \
                 UNION ALL SELECT CAST(id AS TEXT), message_type, status FROM {s}outbox_commands",
            )
            .await;
        rows.into_iter()
            .map(|(id, message_type, status)| Outboxed {
                id,
                message_type,
                status,
            })
            .collect()
    }

    /// Every inbox row, of both kinds.
    pub(crate) async fn inbox(&self) -> Vec<Inboxed> {
        let columns = "CAST(id AS TEXT), subscriber, message_type, status, \
                       CAST(retry_count AS BIGINT), CAST(takeover_count AS BIGINT), \
                       COALESCE(last_error, '')";
        let rows: Vec<(String, String, String, String, i64, i64, String)> = self
            .rows(&format!(
                "SELECT {columns} FROM {{s}}inbox_events \
                 UNION ALL SELECT {columns} FROM {{s}}inbox_commands"
            ))
            .await;
        rows.into_iter()
            .map(
                |(id, subscriber, message_type, status, retries, takeovers, last_error)| Inboxed {
                    id,
                    subscriber,
                    message_type,
                    status,
                    retries,
                    takeovers,
                    last_error,
                },
            )
            .collect()
    }

    /// Every handler run: `(message id, subscriber, worker)`.
    pub(crate) async fn runs(&self) -> Vec<(String, String, String)> {
        self.runs
            .fetch(&self.sql("SELECT message_id, subscriber, worker FROM {s}fleet_runs"))
            .await
    }

    /// Every committed effect: `(message id, subscriber, worker)`.
    pub(crate) async fn effects(&self) -> Vec<(String, String, String)> {
        self.rows("SELECT message_id, subscriber, worker FROM {s}fleet_effects")
            .await
    }

    /// The registered subscriptions: `(kind, message type, subscriber)`.
    pub(crate) async fn subscriptions(&self) -> BTreeSet<(String, String, String)> {
        self.rows::<(String, String, String)>(
            "SELECT kind, message_type, subscriber FROM {s}subscriptions",
        )
        .await
        .into_iter()
        .collect()
    }

    /// Starts sampling who holds inbox rows (see [`Sampler`]).
    pub(crate) fn sampler(&self) -> Sampler {
        Sampler::start(
            self.boxes.clone(),
            self.sql(
                "SELECT subscriber, COALESCE(locked_by, '') FROM {s}inbox_events \
                 WHERE status = 'PROCESSING' \
                 UNION ALL SELECT subscriber, COALESCE(locked_by, '') FROM {s}inbox_commands \
                 WHERE status = 'PROCESSING'",
            ),
        )
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// An outbox row.
#[derive(Debug, Clone)]
pub(crate) struct Outboxed {
    pub(crate) id: String,
    pub(crate) message_type: String,
    pub(crate) status: String,
}

/// An inbox row.
#[derive(Debug, Clone)]
pub(crate) struct Inboxed {
    pub(crate) id: String,
    pub(crate) subscriber: String,
    pub(crate) message_type: String,
    pub(crate) status: String,
    pub(crate) retries: i64,
    pub(crate) takeovers: i64,
    pub(crate) last_error: String,
}

/// Who must get what: every message of `message_type` reaches `subscriber` exactly once —
/// or, with `required`, exactly those messages do and any other at most once.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub(crate) message_type: &'static str,
    pub(crate) subscriber: &'static str,
    pub(crate) required: Option<BTreeSet<String>>,
}

impl Route {
    /// Every message of `message_type` reaches `subscriber` exactly once.
    pub(crate) fn every(message_type: &'static str, subscriber: &'static str) -> Route {
        Route {
            message_type,
            subscriber,
            required: None,
        }
    }
}

/// How many handler runs a message may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runs {
    Once,
    AtLeastOnce,
}

/// The state of a run read from the database: the sender's outbox, the receiver's inbox,
/// runs and effects (one database in process, two over a broker).
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) outbox: Vec<Outboxed>,
    pub(crate) inbox: Vec<Inboxed>,
    pub(crate) runs: Vec<(String, String, String)>,
    pub(crate) effects: Vec<(String, String, String)>,
}

impl Snapshot {
    /// The outboxes of `senders`, the rest of `receiver`.
    pub(crate) async fn read(senders: &[&FleetDb], receiver: &FleetDb) -> Snapshot {
        let mut outbox = Vec::new();
        for sender in senders {
            outbox.extend(sender.outbox().await);
        }
        Snapshot {
            outbox,
            inbox: receiver.inbox().await,
            runs: receiver.runs().await,
            effects: receiver.effects().await,
        }
    }

    /// The ids a route must deliver.
    fn required<'a>(&'a self, route: &'a Route) -> Box<dyn Iterator<Item = &'a str> + 'a> {
        match &route.required {
            Some(ids) => Box::new(ids.iter().map(String::as_str)),
            None => Box::new(
                self.outbox
                    .iter()
                    .filter(|o| o.message_type == route.message_type)
                    .map(|o| o.id.as_str()),
            ),
        }
    }

    /// Whether the run is over: no live row in any box, and every message the routes
    /// require has its inbox row.
    pub(crate) fn settled(&self, routes: &[Route]) -> bool {
        let live = |status: &str| status == "PENDING" || status == "PROCESSING";
        if self.outbox.iter().any(|o| live(&o.status)) || self.inbox.iter().any(|i| live(&i.status))
        {
            return false;
        }
        let rows: BTreeSet<(&str, &str)> = self
            .inbox
            .iter()
            .map(|i| (i.id.as_str(), i.subscriber.as_str()))
            .collect();
        routes.iter().all(|route| {
            self.required(route)
                .all(|id| rows.contains(&(id, route.subscriber)))
        })
    }

    /// Everything wrong with the run, given who must get what: outbox rows not COMPLETED;
    /// inbox rows not COMPLETED, retried, taken over, of no route (`bandeja.rejected`
    /// included) or of no emitted message; a required delivery without exactly one inbox
    /// row, one handler run and one effect; any `(message, subscriber)` run or applied more
    /// than once.
    pub(crate) fn problems(&self, routes: &[Route]) -> Vec<String> {
        self.problems_with(routes, Runs::Once)
    }

    /// [`Snapshot::problems`] after a process was killed: a handler run it had in hand is
    /// run again by another process (at least once), and its rows are taken over; every
    /// message is still stored once and applied once.
    pub(crate) fn problems_after_a_kill(&self, routes: &[Route]) -> Vec<String> {
        self.problems_with(routes, Runs::AtLeastOnce)
    }

    fn problems_with(&self, routes: &[Route], runs_allowed: Runs) -> Vec<String> {
        let once = runs_allowed == Runs::Once;
        let mut problems = Vec::new();
        let mut note = |kind: &str, detail: String, count: &mut usize| {
            *count += 1;
            if *count <= 5 {
                problems.push(format!("{kind}: {detail}"));
            } else if *count == 6 {
                problems.push(format!("{kind}: …"));
            }
        };
        let emitted: HashMap<&str, &str> = self
            .outbox
            .iter()
            .map(|o| (o.id.as_str(), o.message_type.as_str()))
            .collect();
        let mut n = 0;
        for o in self.outbox.iter().filter(|o| o.status != "COMPLETED") {
            note("outbox row not COMPLETED", format!("{o:?}"), &mut n);
        }
        let routed: BTreeSet<(&str, &str)> = routes
            .iter()
            .map(|r| (r.message_type, r.subscriber))
            .collect();
        let (mut bad, mut unrouted, mut unknown) = (0, 0, 0);
        for i in &self.inbox {
            if i.status != "COMPLETED" || (once && (i.retries > 0 || i.takeovers > 0)) {
                note("inbox row not simply COMPLETED", format!("{i:?}"), &mut bad);
            }
            if !routed.contains(&(i.message_type.as_str(), i.subscriber.as_str())) {
                note("inbox row of no route", format!("{i:?}"), &mut unrouted);
            }
            if !emitted.contains_key(i.id.as_str()) {
                note(
                    "inbox row of no emitted message",
                    format!("{i:?}"),
                    &mut unknown,
                );
            }
        }
        let count = |rows: &[(String, String, String)]| {
            let mut counts: HashMap<(String, String), usize> = HashMap::new();
            for (id, subscriber, _) in rows {
                *counts.entry((id.clone(), subscriber.clone())).or_default() += 1;
            }
            counts
        };
        let (runs, effects) = (count(&self.runs), count(&self.effects));
        let (mut twice_run, mut twice_applied) = (0, 0);
        for ((id, subscriber), n) in &runs {
            if once && *n > 1 {
                note(
                    "handler ran more than once",
                    format!("{id} {subscriber}: {n} runs"),
                    &mut twice_run,
                );
            }
        }
        for ((id, subscriber), n) in &effects {
            if *n > 1 {
                note(
                    "effect applied more than once",
                    format!("{id} {subscriber}: {n} times"),
                    &mut twice_applied,
                );
            }
        }
        let inbox: BTreeMap<(&str, &str), &Inboxed> = self
            .inbox
            .iter()
            .map(|i| ((i.id.as_str(), i.subscriber.as_str()), i))
            .collect();
        for route in routes {
            let mut missing = 0;
            let key = |id: &str| (id.to_owned(), route.subscriber.to_owned());
            for id in self.required(route) {
                let (row, ran, applied) = (
                    inbox
                        .get(&(id, route.subscriber))
                        .map(|i| i.status.as_str()),
                    runs.get(&key(id)).copied().unwrap_or(0),
                    effects.get(&key(id)).copied().unwrap_or(0),
                );
                let ran_as_allowed = if once { ran == 1 } else { ran >= 1 };
                if row != Some("COMPLETED") || !ran_as_allowed || applied != 1 {
                    note(
                        &format!(
                            "{} not delivered to {} exactly once",
                            route.message_type, route.subscriber
                        ),
                        format!("{id}: inbox row {row:?}, {ran} runs, {applied} effects"),
                        &mut missing,
                    );
                }
            }
        }
        problems
    }

    /// Handler runs per `(subscriber, worker)`, for the test's output.
    pub(crate) fn runs_by_worker(&self) -> BTreeMap<(String, String), usize> {
        let mut counts = BTreeMap::new();
        for (_, subscriber, worker) in &self.runs {
            *counts
                .entry((subscriber.clone(), worker.clone()))
                .or_default() += 1;
        }
        counts
    }
}

/// Waits (at most `timeout`) until the run is [`Snapshot::settled`], or until a row is
/// FAILED; the last snapshot. Panics with the status counts and the problems found when
/// it never settles.
pub(crate) async fn wait_settled(
    senders: &[&FleetDb],
    receiver: &FleetDb,
    routes: &[Route],
    timeout: Duration,
) -> Snapshot {
    let settled = eventually(timeout, || async {
        let snapshot = Snapshot::read(senders, receiver).await;
        // A FAILED row is final: the verdict can be read at once.
        let failed = snapshot.outbox.iter().any(|o| o.status == "FAILED")
            || snapshot.inbox.iter().any(|i| i.status == "FAILED");
        (failed || snapshot.settled(routes)).then_some(snapshot)
    })
    .await;
    match settled {
        Ok(snapshot) => snapshot,
        Err(_) => {
            let snapshot = Snapshot::read(senders, receiver).await;
            panic!(
                "not settled after {timeout:?}: {}; problems so far: {:#?}",
                status_counts(&snapshot),
                snapshot.problems(routes)
            );
        }
    }
}

/// `outbox <type> <status>=n, inbox <subscriber> <status>=n`, for messages.
pub(crate) fn status_counts(snapshot: &Snapshot) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for o in &snapshot.outbox {
        *counts
            .entry(format!("outbox {} {}", o.message_type, o.status))
            .or_default() += 1;
    }
    for i in &snapshot.inbox {
        *counts
            .entry(format!("inbox {} {}", i.subscriber, i.status))
            .or_default() += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads, every [`READ_EVERY`] until stopped, which worker holds which subscriber's inbox
/// rows (`locked_by` of PROCESSING rows is `<worker id>#<instance>.<claim>`), so a test
/// can show that no process ever claimed a row of a subscriber it does not run (once a row
/// is COMPLETED its `locked_by` is cleared: only sampling sees the claims).
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<(BTreeSet<(String, String)>, usize)>,
}

impl Sampler {
    fn start(pool: Pool, sql: String) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let (mut seen, mut samples) = (BTreeSet::new(), 0);
            while !stopped.load(Ordering::Relaxed) {
                // An error ends the sampling (the test failed and dropped its database);
                // a test that goes on sees it from the sample count.
                let Ok(held) = pool.try_fetch::<(String, String)>(&sql).await else {
                    break;
                };
                samples += 1;
                for (subscriber, locked_by) in held {
                    let worker = locked_by.split('#').next().unwrap_or_default().to_owned();
                    seen.insert((subscriber, worker));
                }
                tokio::time::sleep(READ_EVERY / 2).await;
            }
            (seen, samples)
        });
        Sampler { stop, task }
    }

    /// Stops sampling; every `(subscriber, worker)` seen holding a row, and how many
    /// samples were taken.
    pub(crate) async fn finish(self) -> (BTreeSet<(String, String)>, usize) {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.expect("sampler")
    }
}

/// A `fleet-node` process (see the binary's documentation for `args`); waits for `ready`.
pub(crate) fn node(name: &str, args: &[String]) -> Service {
    let mut all = strings(&["--worker-id", name]);
    all.extend_from_slice(args);
    Service::spawn(NODE, name, &all, &[])
}

/// The `fleet-node` flags of a process of `service` over a broker (`nats` or `amqp`) at
/// `url` under `prefix`.
pub(crate) fn broker_flags(transport: &str, url: &str, prefix: &str, service: &str) -> Vec<String> {
    args(&[
        "--transport",
        transport,
        "--broker-url",
        url,
        "--prefix",
        prefix,
        "--service",
        service,
    ])
}

/// The `fleet-node` flags of a process of `service` on `db` over a broker
/// ([`broker_flags`]), then `extra`.
pub(crate) fn broker_node_flags(
    db: &FleetDb,
    transport: &str,
    url: &str,
    prefix: &str,
    service: &str,
    extra: &[&str],
) -> Vec<String> {
    let mut flags = db.store_args();
    flags.extend(broker_flags(transport, url, prefix, service));
    flags.extend(args(extra));
    flags
}

/// `args` as owned strings.
pub(crate) fn args(items: &[&str]) -> Vec<String> {
    strings(items)
}

/// The options `fleet-node` gives NATS under `prefix` (what the streams are declared with).
fn nats_options(url: &str, prefix: &str) -> bandeja::nats::NatsOptions {
    bandeja::nats::NatsOptions::new(url)
        .prefix(prefix)
        .partitions(4)
        .ack_wait(Duration::from_secs(5))
        .fetch_wait(Duration::from_millis(200))
        .max_age(Duration::from_secs(600))
}

/// Deletes the two NATS streams of a run when dropped (on a thread of its own: `Drop`
/// cannot await, and the test's runtime may be ending).
pub(crate) struct NatsStreams {
    url: String,
    names: [String; 2],
}

impl Drop for NatsStreams {
    fn drop(&mut self) {
        let (url, names) = (self.url.clone(), self.names.clone());
        let cleanup = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                let Ok(client) = async_nats::connect(url).await else {
                    return;
                };
                let jetstream = async_nats::jetstream::new(client);
                for name in names {
                    let _ = jetstream.delete_stream(&name).await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

/// Connects to NATS at `url` with `fleet-node`'s options under `prefix` (declaring the
/// streams); the guard that deletes them. `None` when NATS is unreachable outside CI (after
/// a notice); a panic in CI (`CI=true`).
pub(crate) async fn reach_nats(url: &str, prefix: &str) -> Option<NatsStreams> {
    match bandeja::nats::NatsTransport::connect(nats_options(url, prefix)).await {
        Ok(transport) => Some(NatsStreams {
            url: url.to_owned(),
            names: [
                transport.stream(MessageKind::Event),
                transport.stream(MessageKind::Command),
            ],
        }),
        Err(error) => unreachable("NATS", url, &error),
    }
}

/// Connects to RabbitMQ at `url` with `fleet-node`'s options under `prefix` (its queues
/// expire and its exchanges auto-delete); `None` when RabbitMQ is unreachable outside CI
/// (after a notice); a panic in CI (`CI=true`).
pub(crate) async fn reach_amqp(url: &str, prefix: &str) -> Option<()> {
    let options = bandeja::amqp::AmqpOptions::default()
        .url(url)
        .prefix(prefix)
        .partitions(4)
        .queue_expires(Some(Duration::from_secs(60)))
        .auto_delete_exchanges(true);
    match bandeja::amqp::AmqpTransport::connect(options).await {
        Ok(_) => Some(()),
        Err(error) => unreachable("RabbitMQ", url, &error),
    }
}

/// The broker `name` at `url` did not answer: a panic in CI, a notice and `None` otherwise.
fn unreachable<T>(name: &str, url: &str, error: &dyn std::fmt::Display) -> Option<T> {
    assert!(
        !bandeja_postgres::testing::in_ci(),
        "{name} is unreachable at {url}: {error}"
    );
    eprintln!("notice: {name} is unreachable at {url} ({error}); skipping this test");
    None
}

/// `NATS_URL`, or the local server.
pub(crate) fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// `AMQP_URL`, or the local RabbitMQ.
pub(crate) fn amqp_url() -> String {
    std::env::var("AMQP_URL").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}
