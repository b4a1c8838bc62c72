//! `scale-worker` child processes: started and awaited until `ready`, SIGKILLed like a
//! crash, stopped gracefully with SIGTERM, and killed (and reaped) when dropped.
//!
//! `SCALE_WORKER_BIN` may name the executable to run instead of the one built with the
//! tests, e.g. `cargo build --release -p bandeja-scale-tests --bin scale-worker` then
//! `SCALE_WORKER_BIN=<target>/release/scale-worker cargo test -p bandeja-scale-tests`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bandeja::testing::eventually;

use super::database_url;

/// The `scale-worker` executable: the one cargo built with the tests, unless
/// `SCALE_WORKER_BIN` names another (e.g. a `--release` build, which drains several times
/// faster than the unoptimized one on a small machine).
fn worker_binary() -> String {
    std::env::var("SCALE_WORKER_BIN")
        .ok()
        .filter(|path| !path.is_empty())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_scale-worker").to_owned())
}

/// A running `scale-worker` process, SIGKILLed (and reaped) when dropped.
pub(crate) struct Worker {
    child: Child,
    /// Its `--worker-id`.
    pub(crate) id: String,
    /// The `application_name` of its connections (`<id>.<schema>`).
    pub(crate) application_name: String,
}

impl Worker {
    /// Starts `scale-worker` on `schema` and waits until it prints `ready`.
    pub(crate) async fn start(schema: &str, id: &str, fail_rate: f64, lease_secs: u32) -> Worker {
        let (fail_rate, lease) = (fail_rate.to_string(), lease_secs.to_string());
        Worker::start_with(schema, id, &["--fail-rate", &fail_rate, "--lease", &lease]).await
    }

    /// Starts `scale-worker` on `schema` with these further flags and waits until it
    /// prints `ready`.
    pub(crate) async fn start_with(schema: &str, id: &str, flags: &[&str]) -> Worker {
        Worker::start_binary(&worker_binary(), schema, id, flags).await
    }

    /// Starts `binary` (a `scale-worker`-like executable: `--database-url`, `--schema`,
    /// `--worker-id`, then `flags`; prints `ready`) and waits until it is ready.
    pub(crate) async fn start_binary(
        binary: &str,
        schema: &str,
        id: &str,
        flags: &[&str],
    ) -> Worker {
        let application_name = format!("{id}.{schema}");
        let url = database_url();
        let separator = if url.contains('?') { '&' } else { '?' };
        let url = format!("{url}{separator}application_name={application_name}");
        let mut child = Command::new(binary)
            .args(["--database-url", &url, "--schema", schema])
            .args(["--worker-id", id])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {binary}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let worker = Worker {
            child,
            id: id.to_owned(),
            application_name,
        };
        let first_line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).map(|_| line)
        });
        match tokio::time::timeout(Duration::from_secs(30), first_line).await {
            Ok(Ok(Ok(line))) if line.trim() == "ready" => worker,
            other => panic!("{binary} {id} did not become ready: {other:?}"),
        }
    }

    /// SIGKILL, then reap: no graceful anything, like a crash.
    pub(crate) fn kill(&mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("reap");
    }

    /// SIGTERM, then waits (at most `timeout`) for the process to exit.
    pub(crate) async fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill -TERM");
        assert!(sent.success(), "kill -TERM {} failed", self.id);
        let child = &mut self.child;
        eventually(timeout, || {
            let exited = child.try_wait().ok().flatten();
            async move { exited }
        })
        .await
        .unwrap_or_else(|e| panic!("{} did not stop after SIGTERM: {e}", self.id))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Stops every worker with SIGTERM and checks each stopped gracefully (exit status 0).
pub(crate) async fn terminate_all(workers: &mut [Worker]) {
    let started = Instant::now();
    for worker in workers.iter_mut() {
        let status = worker.terminate(Duration::from_secs(30)).await;
        assert!(status.success(), "{} exited with {status}", worker.id);
    }
    eprintln!(
        "graceful shutdown of {} workers: {:?}",
        workers.len(),
        started.elapsed()
    );
}

/// Runs `scale-worker` on `schema` with `BANDEJA_CRASH_AT=point` (and `--emit emit`) and
/// waits (at most `timeout`) for it to abort there; returns its exit status.
pub(crate) async fn run_until_crash(
    schema: &str,
    id: &str,
    lease_secs: u32,
    (point, emit): (&str, u64),
    timeout: Duration,
) -> ExitStatus {
    let mut child = Command::new(worker_binary())
        .args(["--database-url", &database_url(), "--schema", schema])
        .args(["--worker-id", id])
        .args(["--lease", &lease_secs.to_string()])
        .args(["--emit", &emit.to_string()])
        .env("BANDEJA_CRASH_AT", point)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn scale-worker");
    let exited = eventually(timeout, || {
        let exited = child.try_wait().ok().flatten();
        async move { exited }
    })
    .await;
    match exited {
        Ok(status) => status,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{id} never reached crash point {point}: {e}")
        }
    }
}
