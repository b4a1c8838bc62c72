//! Shared by the CLI tests: running the real `bandeja` binary, and seeding a store by
//! running the real bandeja runtime (emission → dispatch → inbox → handlers), with one
//! subscriber that always fails (rows end FAILED) and one that succeeds (rows end
//! COMPLETED).

// Each test crate uses a part of this module.
#![allow(dead_code)]

pub(crate) mod databases;
pub(crate) mod paging;
pub(crate) mod serving;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use bandeja_conformance::fixtures::{emit_ping, fast_config, take_over, Ping};
use bandeja_core::admin::Admin;
use bandeja_core::testing::eventually;
use bandeja_core::{
    Bandeja, BoxKind, Event, EventHandler, HandlerContext, HandlerError, MessageId, MessageStatus,
    Store,
};

/// How many Ping events a seed emits.
pub(crate) const SEEDED: usize = 3;

/// The subscriber whose handler always fails.
pub(crate) const FAILING: &str = "billing";

/// The subscriber whose handler succeeds.
pub(crate) const SUCCEEDING: &str = "audit";

/// The error the failing handler returns.
pub(crate) const FAILURE: &str = "card declined";

/// What the `bandeja` process did.
#[derive(Debug)]
pub(crate) struct Run {
    /// Exit code (`None`: killed by a signal).
    pub(crate) code: Option<i32>,
    /// Standard output.
    pub(crate) stdout: String,
    /// Standard error.
    pub(crate) stderr: String,
}

impl Run {
    /// The JSON document on stdout; panics with both streams when it is not one.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {self:#?}"))
    }

    /// Panics with both streams unless the exit code is `code`.
    pub(crate) fn expect_code(self, code: i32) -> Run {
        assert_eq!(self.code, Some(code), "{self:#?}");
        self
    }
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Runs `bandeja <args>` with stdin not a terminal (`/dev/null`) and no `DATABASE_URL`
/// inherited, and waits for it.
pub(crate) fn bandeja(args: &[&str]) -> Run {
    bandeja_with_env(args, &[])
}

/// [`bandeja`] with the variables `env` (see [`command`]).
pub(crate) fn bandeja_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    command(args, env)
        .output()
        .expect("run the bandeja binary")
        .into()
}

/// `bandeja <args>` with the variables `env`, stdin not a terminal (`/dev/null`), and no
/// `DATABASE_URL`, `RUST_LOG` or `BANDEJA_*` variable inherited (one of the test's own
/// environment would change what it checks).
pub(crate) fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bandeja"));
    command.args(args);
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if text.starts_with("BANDEJA_") || text == "DATABASE_URL" || text == "RUST_LOG" {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied()).stdin(Stdio::null());
    command
}

/// A (two-thread) runtime for the async parts of a test.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Fails every attempt with [`FAILURE`] (a retriable error).
#[derive(Clone)]
struct Failing;

impl<S: Store> EventHandler<S, Ping> for Failing {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        _event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        Err(FAILURE.into())
    }
}

/// Succeeds.
#[derive(Clone)]
struct Succeeding;

impl<S: Store> EventHandler<S, Ping> for Succeeding {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        _event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// Emits [`SEEDED`] Ping events through the runtime and waits until every inbox row is
/// terminal: [`FAILING`]'s rows FAILED (after one retry), [`SUCCEEDING`]'s COMPLETED; the
/// outbox rows COMPLETED. Returns the ids, in emission order.
pub(crate) async fn seed<S: Admin>(store: &S) -> Vec<MessageId> {
    let mut config = fast_config();
    config.events_inbox.max_retries = 1;
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event::<Ping, _>(FAILING, Failing)
        .on_event::<Ping, _>(SUCCEEDING, Succeeding)
        .build()
        .expect("build the runtime");
    let running = bandeja.start().await.expect("start the runtime");
    let mut ids = Vec::new();
    for n in 0..SEEDED {
        let event = Event::new("Ping", format!("k{n}"), Ping { n: n as u64 });
        ids.push(event.id);
        bandeja.emit(&event).await.expect("emit");
    }
    let done = eventually(Duration::from_secs(30), || async {
        let inbox = store.rows(BoxKind::InboxEvents).await.ok()?;
        let outbox = store.rows(BoxKind::OutboxEvents).await.ok()?;
        let settled = inbox.len() == 2 * SEEDED
            && inbox.iter().all(|r| {
                let wanted = if r.message.subscriber.as_deref() == Some(FAILING) {
                    MessageStatus::Failed
                } else {
                    MessageStatus::Completed
                };
                r.message.status == wanted
            })
            && outbox.len() == SEEDED
            && outbox
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed);
        settled.then_some(())
    })
    .await;
    running.shutdown().await;
    done.expect("the seeded rows settle: FAILED for billing, COMPLETED for audit");
    ids
}

/// `bandeja <args> <database>` (`database`: the `--database …` options of a test's store).
pub(crate) fn run_on(database: &[&str], args: &[&str]) -> Run {
    let mut all = args.to_vec();
    all.extend_from_slice(database);
    bandeja(&all)
}

/// The rows of `messages list --json` (with `args` added) as JSON values.
pub(crate) fn listed(database: &[&str], args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = vec!["messages", "list", "--json"];
    all.extend_from_slice(args);
    let run = run_on(database, &all).expect_code(0);
    let document = run.json();
    let messages = document["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages array: {run:#?}"))
        .clone();
    assert_eq!(document["count"].as_u64(), Some(messages.len() as u64));
    messages
}

/// Field `name` of every row, as strings.
pub(crate) fn field(rows: &[serde_json::Value], name: &str) -> Vec<String> {
    rows.iter()
        .map(|r| match &r[name] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Emits one more Ping event (number 99) straight into the events outbox through the
/// `Store` API, claims it with a 1 ms lease as worker `dead` and claims it again as worker
/// `alive` once that lease ran out: the row is PROCESSING (held by `alive`), taken over
/// once, with no failed attempt. The outbox must hold no other due row (after [`seed`], all
/// its rows are COMPLETED). Returns its id.
pub(crate) async fn take_over_one<S: Store>(store: &S) -> MessageId {
    let record = emit_ping(store, 99, "k99").await;
    let taken = take_over(store, std::slice::from_ref(&record)).await;
    assert_eq!(taken.len(), 1);
    record.id
}

/// Checks that `messages list`, `messages show` and `status`, in text and JSON, show the
/// row [`take_over_one`] made with 1 takeover and 0 retries, and every other row with 0
/// takeovers.
pub(crate) fn assert_takeover_shown(database: &[&str], id: MessageId) {
    let id_text = id.to_string();
    let rows = listed(database, &[]);
    assert_eq!(rows.len(), 3 * SEEDED + 1);
    for row in &rows {
        let taken_over = row["id"] == id_text.as_str();
        assert_eq!(row["takeovers"], u64::from(taken_over), "{row:#}");
    }
    let row = rows
        .iter()
        .find(|r| r["id"] == id_text.as_str())
        .expect("the row taken over is listed");
    assert_eq!(row["status"], "PROCESSING", "{row:#}");
    assert_eq!(
        row["retry_count"], 0,
        "a takeover is not a failed attempt: {row:#}"
    );
    assert_eq!(row["locked_by"], "alive", "{row:#}");

    let text = run_on(database, &["messages", "list"])
        .expect_code(0)
        .stdout;
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .collect();
    let header: Vec<&str> = header
        .iter()
        .map(|h| h.trim())
        .filter(|h| !h.is_empty())
        .collect();
    assert_eq!(
        header[7..9],
        ["RETRIES", "TAKEOVERS"],
        "the takeovers beside the retries:\n{text}"
    );
    let line = text
        .lines()
        .find(|l| l.contains(&id_text))
        .unwrap_or_else(|| panic!("no line for {id}:\n{text}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        (cells[4], cells[7], cells[8]),
        ("PROCESSING", "0", "1"),
        "status, retries, takeovers:\n{text}"
    );

    let shown = run_on(database, &["messages", "show", &id_text, "--json"])
        .expect_code(0)
        .json();
    assert_eq!(shown["rows"][0]["takeovers"], 1, "{shown:#}");
    assert_eq!(shown["rows"][0]["retry_count"], 0, "{shown:#}");
    let text = run_on(database, &["messages", "show", &id_text])
        .expect_code(0)
        .stdout;
    assert!(
        text.lines()
            .any(|l| l.starts_with("attempts") && l.ends_with("retry count 0, takeovers 1")),
        "{text}"
    );

    let status = run_on(database, &["status", "--json"])
        .expect_code(0)
        .json();
    let boxes = status["boxes"].as_array().expect("boxes");
    let taken: Vec<(String, u64)> = boxes
        .iter()
        .map(|b| {
            (
                b["box"].as_str().unwrap_or_default().to_owned(),
                b["taken_over"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect();
    assert_eq!(
        taken,
        [
            ("outbox_events".to_owned(), 1),
            ("inbox_events".to_owned(), 0),
            ("outbox_commands".to_owned(), 0),
            ("inbox_commands".to_owned(), 0),
        ],
        "{status:#}"
    );
    let text = run_on(database, &["status"]).expect_code(0).stdout;
    assert!(
        text.lines()
            .next()
            .unwrap_or_default()
            .contains("STUCK  TAKEN OVER"),
        "{text}"
    );
    let outbox = text
        .lines()
        .find(|l| l.starts_with("outbox_events"))
        .unwrap_or_else(|| panic!("no outbox_events line:\n{text}"));
    let cells: Vec<&str> = outbox.split_whitespace().collect();
    assert_eq!(
        cells[1..6],
        ["0", "1", "0", "0", "1"],
        "pending, processing, failed, stuck, taken over:\n{text}"
    );
}
