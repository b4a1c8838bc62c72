//! A `kafka-mock` child process (librdkafka's mock cluster on localhost ports, the package's
//! `kafka-mock` binary) for runs whose services are processes of their own: its brokers
//! taken down and brought up again on command. It keeps its topics, offsets and consumer
//! groups in memory across an outage (it is not restarted, its brokers stop answering),
//! and exits when dropped (its standard input closes).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The running cluster; dropping it kills the `kafka-mock` process, and its topics with it.
pub struct KafkaMock {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    servers: String,
}

impl KafkaMock {
    /// Starts `binary` (a `kafka-mock`) with three brokers; returns once they listen.
    pub fn start(binary: &Path) -> Result<KafkaMock, String> {
        let mut child = Command::new(binary)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start {}: {e} (build it with `cargo build -p bandeja-scale-tests`, \
                     or name another with --kafka-mock-bin)",
                    binary.display()
                )
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("kafka-mock's standard input or output is not piped".to_owned());
        };
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let Some(servers) = line.trim().strip_prefix("ready ").map(str::to_owned) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "kafka-mock did not say `ready <servers>` but {line:?} ({read:?})"
            ));
        };
        Ok(KafkaMock {
            child,
            stdin,
            stdout,
            servers,
        })
    }

    /// Its bootstrap servers.
    #[must_use]
    pub fn servers(&self) -> &str {
        &self.servers
    }

    /// Every broker stops answering (connections closed, new ones refused); returns once
    /// they have.
    pub fn down(&mut self) -> Result<(), String> {
        self.say("down")
    }

    /// Every broker answers again; returns once they do.
    pub fn up(&mut self) -> Result<(), String> {
        self.say("up")
    }

    /// Sends `command` and waits for its `ok`.
    fn say(&mut self, command: &str) -> Result<(), String> {
        writeln!(self.stdin, "{command}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("cannot write {command:?} to kafka-mock: {e}"))?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| format!("no answer from kafka-mock to {command:?}: {e}"))?;
        if line.trim() == "ok" {
            Ok(())
        } else {
            Err(format!("kafka-mock answered {command:?} with {line:?}"))
        }
    }
}

impl Drop for KafkaMock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
