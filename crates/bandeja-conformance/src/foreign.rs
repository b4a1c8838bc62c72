//! Clients that no one here wrote, speaking to bandeja services over a broker: a Python
//! program (`scripts/foreign-clients/client.py`) that builds and parses CloudEvents with
//! the CloudEvents SDK and moves them with each broker's own Python client (`nats-py`,
//! `pika`, `redis`, `kafka-python`). [`python_clients_publish_and_consume`] is the check each broker
//! transport runs with it.
//!
//! The interpreter is `BANDEJA_PYTHON` (`.ci/run` sets it to a virtualenv it fills from
//! `scripts/foreign-clients/requirements.txt`), else that virtualenv's default place
//! (`$HOME/.cache/bandeja-python`). Without one that can import the clients the check
//! fails when `CI=true` and is skipped with a message otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use bandeja_core::record::BoxKind;
use bandeja_core::store::Inspect;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::fixtures::Ping;
use crate::transport::{completed, emit, stop, wait_rows, Harness, Seen};

/// How long a client may take to publish, or to see what it waits for.
const CLIENT_WAIT: Duration = Duration::from_secs(60);

/// The Python program.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/foreign-clients/client.py")
}

/// A Python interpreter that can import the clients, if there is one.
///
/// # Panics
///
/// When there is none and `CI=true`.
pub async fn python() -> Option<PathBuf> {
    let python = match std::env::var_os("BANDEJA_PYTHON") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/bandeja-python/bin/python"),
    };
    let imports = Command::new(&python)
        .args(["-c", "import cloudevents, kafka, nats, pika, redis"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .is_ok_and(|status| status.success());
    if imports {
        return Some(python);
    }
    let how = format!(
        "no Python with the foreign clients at {} (set BANDEJA_PYTHON, or run: python3 -m \
         venv ~/.cache/bandeja-python && ~/.cache/bandeja-python/bin/pip install -r \
         scripts/foreign-clients/requirements.txt)",
        python.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{how}");
    eprintln!("skipped: {how}");
    None
}

/// The arguments naming the broker and the names of the test's services.
fn broker_args(broker: &str, url: &str, prefix: &str, partitions: u16) -> Vec<String> {
    vec![
        broker.to_owned(),
        "--url".to_owned(),
        url.to_owned(),
        "--prefix".to_owned(),
        prefix.to_owned(),
        "--partitions".to_owned(),
        partitions.to_string(),
        "--type".to_owned(),
        <Ping as bandeja_core::Payload>::TYPE.to_owned(),
    ]
}

/// A consuming client, listening.
struct Listening {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Listening {
    /// Starts `client.py consume` and waits for its `ready`.
    async fn start(python: &Path, args: Vec<String>, count: usize) -> Listening {
        let mut child = Command::new(python)
            .arg(script())
            .arg("consume")
            .args(args)
            .args(["--count", &count.to_string()])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the Python consumer");
        let stdout = child.stdout.take().expect("the consumer's output");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(CLIENT_WAIT, lines.next_line())
            .await
            .expect("the Python consumer got ready in time")
            .expect("read the consumer's output");
        assert_eq!(first.as_deref(), Some("ready"), "the consumer's first line");
        Listening { child, lines }
    }

    /// The events it printed, once it exited.
    async fn events(mut self) -> Vec<serde_json::Value> {
        let mut events = Vec::new();
        let read = async {
            while let Some(line) = self.lines.next_line().await.expect("read the consumer") {
                events.push(serde_json::from_str(&line).expect("a JSON line"));
            }
            self.child.wait().await.expect("the consumer exits")
        };
        let status = tokio::time::timeout(CLIENT_WAIT, read)
            .await
            .expect("the Python consumer received everything in time");
        assert!(status.success(), "the Python consumer failed: {status}");
        events
    }
}

/// A Python client publishes CloudEvents (twice each) that a bandeja service handles
/// exactly once and in per-key order, and consumes the CloudEvents a bandeja service
/// publishes, every attribute readable by the CloudEvents SDK. `broker` is the client's
/// name for the broker (`nats`, `amqp`, `redis`, `kafka`), `url` its address and `prefix` the
/// prefix of the names of the harness's transports.
///
/// # Panics
///
/// When a client fails or the services do not handle what they should.
pub async fn python_clients_publish_and_consume<S: Inspect>(
    h: Harness<S>,
    broker: &str,
    url: &str,
    prefix: &str,
) {
    let Some(python) = python().await else {
        return;
    };
    let store = h.store().await;
    let seen = Seen::default();
    let transport = h.transport().await;
    let partitions = transport.partitions();
    let args = broker_args(broker, url, prefix, partitions);
    let service = h.service("inventory", &store, transport, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let running = service.start().await.expect("start the service");

    // In: 30 events and 3 fences, every event twice (all of them, then all again).
    let count = 30;
    let published = tokio::time::timeout(
        CLIENT_WAIT,
        Command::new(&python)
            .arg(script())
            .arg("publish")
            .args(&args)
            .args(["--count", &count.to_string(), "--copies", "2"])
            .status(),
    )
    .await
    .expect("the Python publisher finished in time")
    .expect("run the Python publisher");
    assert!(
        published.success(),
        "the Python publisher failed: {published}"
    );
    // The fences come after every copy on each key's partition, so once they are handled
    // every copy has been received (stored or absorbed).
    let inbox = wait_rows(
        &store,
        BoxKind::InboxEvents,
        "the Python client's events handled",
        completed(count + 3),
    )
    .await;
    let handled = seen.all();
    assert_eq!(
        handled.len(),
        count + 3,
        "each event handled once: {handled:?}"
    );
    let mut per_key: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (_, key, n) in &handled {
        per_key.entry(key.clone()).or_default().push(*n);
    }
    for (key, ns) in &per_key {
        assert!(ns.is_sorted(), "key {key} handled in order: {ns:?}");
    }
    let mut ns: Vec<u64> = handled.iter().map(|h| h.2).collect();
    ns.sort_unstable();
    assert_eq!(ns, (0..count as u64 + 3).collect::<Vec<_>>());
    let row = inbox
        .iter()
        .find(|r| {
            r.message
                .record
                .headers
                .extra
                .get("cloudevents_id")
                .map(String::as_str)
                == Some("py-0")
        })
        .expect("the row of py-0 keeps its CloudEvents id");
    let record = &row.message.record;
    assert_eq!(
        record.headers.source_service.as_deref(),
        Some("/python/client")
    );
    assert_eq!(record.partition_key.as_deref(), Some("k-0"));
    assert_eq!(
        record.headers.extra.get("pyclient").map(String::as_str),
        Some("cloudevents-sdk"),
        "an extension attribute of the client's is a header"
    );

    // Out: what the service publishes, read by the Python client.
    let listening = Listening::start(&python, args, 5).await;
    let ids = emit(&store, (0..5).map(|n| (100 + n, format!("out-{n}")))).await;
    let events = listening.events().await;
    stop(running).await;
    let mut received: Vec<String> = Vec::new();
    for event in &events {
        let attributes = &event["attributes"];
        assert_eq!(attributes["specversion"], "1.0", "{event}");
        assert_eq!(attributes["source"], "inventory", "{event}");
        assert_eq!(
            attributes["type"],
            <Ping as bandeja_core::Payload>::TYPE,
            "{event}"
        );
        assert_eq!(attributes["bandejakind"], "event", "{event}");
        assert!(attributes["time"].is_string(), "{event}");
        let n = event["data"]["n"].as_u64().expect("data.n");
        assert_eq!(
            attributes["partitionkey"],
            format!("out-{}", n - 100),
            "{event}"
        );
        received.push(attributes["id"].as_str().expect("id").to_owned());
    }
    received.sort();
    let mut sent: Vec<String> = ids.iter().map(ToString::to_string).collect();
    sent.sort();
    assert_eq!(
        received, sent,
        "the Python client received each event the service published"
    );
}
