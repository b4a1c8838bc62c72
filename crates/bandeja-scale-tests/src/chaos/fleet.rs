//! The worker processes of a chaos run: `scale-worker` children started and awaited until
//! they print `ready`, SIGKILLed like a crash, restarted under a new worker id (optionally
//! with a named crash point armed), and stopped with SIGTERM at the end.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// How long a starting worker may take to print `ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// One slot of the fleet: the process that currently fills it.
struct Slot {
    child: Child,
    id: String,
    armed: Option<String>,
}

/// A process that ended without being killed by the run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Exit {
    /// Its worker id.
    pub worker: String,
    /// The crash point it was armed with (`<point>@<n>`), if any.
    pub armed: Option<String>,
    /// How it ended (`signal 6` for an abort at a crash point).
    pub status: String,
}

impl Exit {
    /// Whether this is an armed worker aborting (SIGABRT) at its crash point.
    pub(crate) fn is_crash_point_abort(&self) -> bool {
        self.armed.is_some() && self.status == describe_signal(ABORT_SIGNAL)
    }
}

/// The signal `std::process::abort` raises, which a crash point uses.
const ABORT_SIGNAL: i32 = 6;

/// The worker processes.
pub(crate) struct Fleet {
    bin: PathBuf,
    args: Vec<String>,
    slots: Vec<Slot>,
    generation: u32,
}

impl Fleet {
    /// Starts `count` workers running `bin` with `args` (plus `--worker-id`).
    pub(crate) async fn start(
        bin: PathBuf,
        args: Vec<String>,
        count: u16,
    ) -> Result<Fleet, String> {
        let mut fleet = Fleet {
            bin,
            args,
            slots: Vec::new(),
            generation: 0,
        };
        for slot in 0..usize::from(count) {
            let started = fleet.spawn(slot, None).await?;
            fleet.slots.push(started);
        }
        Ok(fleet)
    }

    /// How many slots.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// `(worker id, pid)` of every running process.
    pub(crate) fn pids(&self) -> Vec<(String, u32)> {
        self.slots
            .iter()
            .map(|s| (s.id.clone(), s.child.id()))
            .collect()
    }

    /// Starts a process for `slot` (a new worker id each time) and waits for `ready`;
    /// a start that fails (e.g. while the database restarts) is tried again for a minute.
    async fn spawn(&mut self, slot: usize, armed: Option<String>) -> Result<Slot, String> {
        let mut last_error = String::new();
        for _ in 0..30 {
            self.generation += 1;
            let id = format!("w{slot}g{}", self.generation);
            match self.spawn_once(&id, armed.as_deref()).await {
                Ok(child) => {
                    return Ok(Slot {
                        child,
                        id,
                        armed: armed.clone(),
                    })
                }
                Err(error) => {
                    eprintln!("chaos: worker {id} did not start: {error}; trying again");
                    last_error = error;
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
        }
        Err(format!("worker slot {slot} never started: {last_error}"))
    }

    async fn spawn_once(&self, id: &str, armed: Option<&str>) -> Result<Child, String> {
        let mut command = Command::new(&self.bin);
        command
            .args(&self.args)
            .args(["--worker-id", id])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(point) = armed {
            command.env(bandeja::fault::CRASH_AT_VAR, point);
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        let Some(stdout) = child.stdout.take() else {
            return Err("no stdout pipe".to_owned());
        };
        let first_line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).map(|_| line)
        });
        match tokio::time::timeout(READY_TIMEOUT, first_line).await {
            Ok(Ok(Ok(line))) if line.trim() == "ready" => Ok(child),
            other => {
                let _ = child.kill();
                let status = child.wait();
                Err(format!("no `ready` ({other:?}); exit: {status:?}"))
            }
        }
    }

    /// SIGKILLs the process of `slot` and reaps it; returns its worker id.
    pub(crate) fn kill(&mut self, slot: usize) -> String {
        let victim = &mut self.slots[slot];
        let _ = victim.child.kill();
        let _ = victim.child.wait();
        victim.id.clone()
    }

    /// Starts a new process in `slot` (after [`Fleet::kill`] or an exit).
    pub(crate) async fn restart(
        &mut self,
        slot: usize,
        armed: Option<String>,
    ) -> Result<(), String> {
        let started = self.spawn(slot, armed).await?;
        self.slots[slot] = started;
        Ok(())
    }

    /// The slots whose process ended by itself since the last call, with how it ended.
    pub(crate) fn exited(&mut self) -> Vec<(usize, Exit)> {
        let mut ended = Vec::new();
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if let Ok(Some(status)) = slot.child.try_wait() {
                ended.push((
                    index,
                    Exit {
                        worker: slot.id.clone(),
                        armed: slot.armed.clone(),
                        status: describe(status),
                    },
                ));
            }
        }
        ended
    }

    /// Stops every process with SIGTERM; the ones that did not exit with status 0 within
    /// `timeout` (killed then) are returned.
    pub(crate) async fn terminate(&mut self, timeout: Duration) -> Vec<Exit> {
        for slot in &self.slots {
            let _ = Command::new("kill")
                .args(["-TERM", &slot.child.id().to_string()])
                .status();
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut bad = Vec::new();
        for slot in &mut self.slots {
            let status = loop {
                if let Ok(Some(status)) = slot.child.try_wait() {
                    break Some(status);
                }
                if tokio::time::Instant::now() >= deadline {
                    break None;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            match status {
                Some(status) if status.success() => {}
                other => {
                    let _ = slot.child.kill();
                    let _ = slot.child.wait();
                    bad.push(Exit {
                        worker: slot.id.clone(),
                        armed: slot.armed.clone(),
                        status: other
                            .map_or_else(|| "did not stop after SIGTERM".to_owned(), describe),
                    });
                }
            }
        }
        bad
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for slot in &mut self.slots {
            if matches!(slot.child.try_wait(), Ok(None)) {
                let _ = slot.child.kill();
                let _ = slot.child.wait();
            }
        }
    }
}

/// `exit 0`, `exit 1`, `signal 6`...
fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => describe_signal(signal),
        _ => status.to_string(),
    }
}

/// `signal 6`...
fn describe_signal(signal: i32) -> String {
    format!("signal {signal}")
}

#[cfg(test)]
mod tests {
    use super::Exit;

    fn exit(armed: Option<&str>, status: &str) -> Exit {
        Exit {
            worker: "w1g6".to_owned(),
            armed: armed.map(str::to_owned),
            status: status.to_owned(),
        }
    }

    #[test]
    fn only_an_armed_worker_aborting_counts_as_its_crash_point() {
        assert!(exit(Some("after-claim@14"), "signal 6").is_crash_point_abort());
        assert!(!exit(None, "signal 6").is_crash_point_abort());
        assert!(!exit(Some("after-claim@14"), "signal 9").is_crash_point_abort());
        assert!(!exit(Some("after-claim@14"), "exit 1").is_crash_point_abort());
        assert!(!exit(Some("after-claim@14"), "did not stop after SIGTERM").is_crash_point_abort());
    }
}
