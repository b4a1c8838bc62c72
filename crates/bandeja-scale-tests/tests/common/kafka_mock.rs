//! A `kafka-mock` child process (librdkafka's mock cluster on localhost ports) for tests
//! whose services are processes of their own: its brokers taken down and brought up
//! again on command; it exits when dropped (its standard input closes).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The running cluster.
pub(crate) struct KafkaMock {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    servers: String,
}

impl KafkaMock {
    /// Starts a cluster of three brokers; returns once they listen.
    pub(crate) fn start() -> KafkaMock {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kafka-mock"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start kafka-mock: {e}"));
        let stdin = child.stdin.take().expect("kafka-mock's stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("kafka-mock's stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("kafka-mock's first line");
        let servers = line
            .trim()
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("kafka-mock said {line:?}"))
            .to_owned();
        KafkaMock {
            child,
            stdin,
            stdout,
            servers,
        }
    }

    /// Its bootstrap servers.
    pub(crate) fn servers(&self) -> &str {
        &self.servers
    }

    /// Sends `command` and waits for its `ok`.
    pub(crate) fn say(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").expect("write to kafka-mock");
        self.stdin.flush().expect("flush kafka-mock's stdin");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("kafka-mock's answer");
        assert_eq!(
            line.trim(),
            "ok",
            "kafka-mock answered {command:?} with {line:?}"
        );
    }
}

impl Drop for KafkaMock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
