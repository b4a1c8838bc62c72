//! The two-services broker run: a consumer and a producer `pair-service` process, each on
//! its own schema, over a broker that the test stops for a while in the middle of the run.
//! Everything is checked from the two databases afterwards.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bandeja::testing::eventually;

use super::{database_url, try_fresh, Fresh};

/// Events the producer emits.
pub(crate) const EVENTS: i64 = 10_000;
/// Commands the producer sends to the consumer.
pub(crate) const COMMANDS: i64 = 1_000;
/// How long the broker stays down.
pub(crate) const OUTAGE: Duration = Duration::from_secs(12);
/// How long the whole run may take to drain after the broker is back.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(240);

/// The broker under test, which the run stops and starts again.
pub(crate) trait Broker {
    /// `nats`, `amqp`, `redis` or `kafka`.
    fn transport(&self) -> &'static str;
    /// The address the services connect to.
    fn url(&self) -> String;
    /// Stops the broker process (or application); returns once it is down.
    fn stop(&mut self);
    /// Starts it again; returns once it accepts connections.
    fn start(&mut self);
    /// Arguments every service of the run takes for this broker.
    fn extra_args(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Waits (at most a minute) until something listens on `port` of 127.0.0.1 (`up`) or
/// nothing does; panics otherwise.
pub(crate) fn wait_for_port(port: u16, up: bool) {
    bandeja_scale_tests::nats_server::wait_for_port(port, up).unwrap_or_else(|e| panic!("{e}"));
}

/// A running `pair-service` (or `fleet-node`) process, killed when dropped.
pub(crate) struct Service {
    child: Child,
    name: String,
    lines: mpsc::Receiver<String>,
    stdin: Option<ChildStdin>,
}

impl Service {
    pub(crate) fn start(name: &'static str, args: &[String]) -> Service {
        Service::start_with(name, args, &[])
    }

    /// Starts it with extra environment variables (e.g. `BANDEJA_CRASH_AT`); waits for `ready`.
    pub(crate) fn start_with(name: &'static str, args: &[String], env: &[(&str, &str)]) -> Service {
        Service::spawn(env!("CARGO_BIN_EXE_pair-service"), name, args, env)
    }

    /// Starts `program` (a binary of this package printing `ready` once running) with
    /// `args` and `env`, its stdin a pipe ([`Service::say`]); waits for `ready`.
    pub(crate) fn spawn(
        program: &str,
        name: &str,
        args: &[String],
        env: &[(&str, &str)],
    ) -> Service {
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {program}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line.trim().to_owned()).is_err() {
                    break;
                }
            }
        });
        let service = Service {
            child,
            name: name.to_owned(),
            lines,
            stdin,
        };
        service.expect_line("ready", Duration::from_secs(60));
        service
    }

    /// Its name in messages.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Waits (at most `timeout`) for the next line it prints, which must be `wanted`.
    pub(crate) fn expect_line(&self, wanted: &str, timeout: Duration) {
        match self.lines.recv_timeout(timeout) {
            Ok(line) if line == wanted => {}
            other => panic!("{} did not print {wanted:?}: {other:?}", self.name),
        }
    }

    /// Writes `line` to its stdin.
    pub(crate) fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is a pipe");
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("write to {}: {e}", self.name));
    }

    /// Waits (at most `timeout`) for the process to exit on its own; its status.
    pub(crate) async fn exited(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let child = &mut self.child;
        eventually(timeout, || {
            let exited = child.try_wait().ok().flatten();
            async move { exited }
        })
        .await
        .unwrap_or_else(|e| panic!("{} did not exit: {e}", self.name))
    }

    pub(crate) async fn terminate(&mut self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill -TERM");
        assert!(sent.success(), "kill -TERM {}", self.name);
        let child = &mut self.child;
        let status = eventually(Duration::from_secs(30), || {
            let exited = child.try_wait().ok().flatten();
            async move { exited }
        })
        .await
        .unwrap_or_else(|e| panic!("{} did not stop after SIGTERM: {e}", self.name));
        assert!(status.success(), "{} exited with {status}", self.name);
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub(crate) fn service_args(
    broker: &dyn Broker,
    role: &str,
    prefix: &str,
    fresh: &Fresh,
) -> Vec<String> {
    [
        "--role",
        role,
        "--transport",
        broker.transport(),
        "--broker-url",
        &broker.url(),
        "--prefix",
        prefix,
        "--database-url",
        &database_url(),
        "--schema",
        fresh.schema(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain(broker.extra_args())
    .collect()
}

/// Runs the producer and the consumer, stops the broker for [`OUTAGE`] once the consumer
/// has handled a first part, and checks: every event and command handled exactly once in
/// effect, per-key order kept, every row COMPLETED, no retry spent on the outage, the
/// outbox accepting emissions during it. Prints the duplicates the inbox absorbed.
pub(crate) async fn run(broker: &mut dyn Broker) {
    let (Some(producer_db), Some(consumer_db)) = (try_fresh().await, try_fresh().await) else {
        return;
    };
    let prefix = format!("pair{:06x}", rand::random::<u32>() & 0xff_ffff);
    let started = Instant::now();
    let mut consumer = Service::start(
        "consumer",
        &service_args(broker, "consumer", &prefix, &consumer_db),
    );
    let mut producer_args = service_args(broker, "producer", &prefix, &producer_db);
    producer_args.extend(
        [
            "--events",
            &EVENTS.to_string(),
            "--commands",
            &COMMANDS.to_string(),
            "--emit-batch",
            "100",
            "--emit-every",
            "100",
        ]
        .iter()
        .map(|s| (*s).to_owned()),
    );
    let mut producer = Service::start("producer", &producer_args);

    consumer_db
        .wait_count("effects", 1_500, Duration::from_secs(120))
        .await;
    let before = producer_db.count("outbox_events").await;
    let down_at = Instant::now();
    broker.stop();
    eprintln!(
        "{}: broker stopped after {:?}, {before} events emitted so far",
        broker.transport(),
        started.elapsed()
    );
    // The outbox keeps accepting emissions while the broker is away.
    producer_db
        .wait_count("outbox_events", before + 300, OUTAGE)
        .await;
    if let Some(left) = OUTAGE.checked_sub(down_at.elapsed()) {
        // The outage itself: the fault lasts this long whatever the services do.
        tokio::time::sleep(left).await;
    }
    let during = producer_db.count("outbox_events").await;
    broker.start();
    eprintln!(
        "{}: broker back after {:?} down; {} events emitted meanwhile",
        broker.transport(),
        down_at.elapsed(),
        during - before
    );
    producer.expect_line("emitted", DRAIN_TIMEOUT);
    consumer_db
        .wait_count("effects", EVENTS + COMMANDS, DRAIN_TIMEOUT)
        .await;
    producer_db
        .wait_count(
            "outbox_commands WHERE status = 'COMPLETED'",
            COMMANDS,
            DRAIN_TIMEOUT,
        )
        .await;
    consumer_db
        .wait_count(
            "inbox_commands WHERE status = 'COMPLETED'",
            COMMANDS,
            DRAIN_TIMEOUT,
        )
        .await;
    consumer_db
        .wait_count(
            "inbox_events WHERE status = 'COMPLETED'",
            EVENTS,
            DRAIN_TIMEOUT,
        )
        .await;
    producer_db
        .wait_count(
            "outbox_events WHERE status = 'COMPLETED'",
            EVENTS,
            DRAIN_TIMEOUT,
        )
        .await;
    let elapsed = started.elapsed();
    producer.terminate().await;
    consumer.terminate().await;

    assert_eq!(
        consumer_db.count("violations").await,
        0,
        "nothing applied twice"
    );
    assert_eq!(
        consumer_db.count("effects").await,
        EVENTS + COMMANDS,
        "nothing lost"
    );
    assert_eq!(
        consumer_db
            .count("effects WHERE subscriber = 'effects'")
            .await,
        EVENTS
    );
    for (db, from) in [
        (&producer_db, "outbox_events"),
        (&producer_db, "outbox_commands"),
        (&consumer_db, "inbox_events"),
        (&consumer_db, "inbox_commands"),
    ] {
        assert_eq!(
            db.count(&format!("{from} WHERE status <> 'COMPLETED'"))
                .await,
            0,
            "{from}: every row COMPLETED"
        );
    }
    let retries: i64 = producer_db
        .scalar(
            "SELECT coalesce(max(retry_count), 0)::int8 FROM \
               (SELECT retry_count FROM {s}.outbox_events UNION ALL \
                SELECT retry_count FROM {s}.outbox_commands) AS r",
        )
        .await;
    assert_eq!(retries, 0, "the outage spent no message's retries");
    let out_of_order: i64 = consumer_db
        .scalar(
            "SELECT count(*) FROM (SELECT n, lag(n) OVER (PARTITION BY subscriber, partition_key \
               ORDER BY seq) AS before FROM {s}.effects) AS e WHERE e.before > e.n",
        )
        .await;
    assert_eq!(out_of_order, 0, "each key handled in emission order");
    let duplicates: i64 = consumer_db
        .scalar(
            "SELECT coalesce(sum(delivery_count - 1), 0)::int8 FROM \
               (SELECT delivery_count FROM {s}.inbox_events UNION ALL \
                SELECT delivery_count FROM {s}.inbox_commands) AS d",
        )
        .await;
    eprintln!(
        "{}: {EVENTS} events + {COMMANDS} commands handled exactly once in {elapsed:?} \
         (outage {OUTAGE:?}); duplicates absorbed by the inbox: {duplicates}",
        broker.transport()
    );
}
