//! A server process of a test's own ([`NatsServer`](crate::nats_server::NatsServer),
//! [`RedisServer`](crate::redis_server::RedisServer),
//! [`TansuServer`](crate::tansu_server::TansuServer)): a free port of 127.0.0.1, a
//! directory of its own for its data, stopped and started again on both, killed when
//! dropped and its directory removed.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to open or close its port.
const PORT_TIMEOUT: Duration = Duration::from_secs(60);

/// Waits (at most a minute) until something listens on `port` of 127.0.0.1 (`up`) or
/// nothing does.
pub fn wait_for_port(port: u16, up: bool) -> Result<(), String> {
    let deadline = Instant::now() + PORT_TIMEOUT;
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() == up {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!(
        "port {port} did not become {} within {PORT_TIMEOUT:?}",
        if up { "open" } else { "closed" }
    ))
}

/// The port, directory and process of one server (`name` in messages).
pub(crate) struct OwnServer {
    name: &'static str,
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl OwnServer {
    /// A free port and a fresh directory for a `name` server; nothing runs yet.
    pub(crate) fn new(name: &'static str) -> Result<OwnServer, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?;
        let dir = std::env::temp_dir().join(format!(
            "bandeja-{name}-{port}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        Ok(OwnServer {
            name,
            port,
            dir,
            child: None,
        })
    }

    /// Its port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Its data directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `command` (the server on [`port`](Self::port) and [`dir`](Self::dir)), its
    /// output discarded; returns once it accepts connections.
    pub(crate) fn run(&mut self, mut command: Command) -> Result<(), String> {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.name))?;
        self.child = Some(child);
        wait_for_port(self.port, true)
    }

    /// Stops it: with `clean`, SIGTERM; otherwise SIGKILL. Returns once the port is
    /// closed.
    pub(crate) fn stop(&mut self, clean: bool) -> Result<(), String> {
        if let Some(mut child) = self.child.take() {
            if clean {
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
            } else {
                let _ = child.kill();
            }
            child
                .wait()
                .map_err(|e| format!("{} did not exit: {e}", self.name))?;
        }
        wait_for_port(self.port, false)
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
