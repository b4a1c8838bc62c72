//! A `nats-server` process of a test's own (from `NATS_SERVER`, default
//! `/usr/sbin/nats-server`), with JetStream, on a free port of 127.0.0.1 and a store
//! directory of its own, so stopping it disturbs no other test. Stopped and started again
//! on the same store directory, its streams survive; killed when dropped, and its
//! directory removed.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to open or close its port.
const PORT_TIMEOUT: Duration = Duration::from_secs(60);

/// A `nats-server` child process.
pub struct NatsServer {
    port: u16,
    store: PathBuf,
    child: Option<Child>,
}

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

impl NatsServer {
    /// Starts a server on a free port; returns once it accepts connections.
    pub fn start() -> Result<NatsServer, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?;
        let store = std::env::temp_dir().join(format!(
            "bandeja-nats-{port}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let mut server = NatsServer {
            port,
            store,
            child: None,
        };
        server.resume()?;
        Ok(server)
    }

    fn binary() -> String {
        std::env::var("NATS_SERVER").unwrap_or_else(|_| "/usr/sbin/nats-server".to_owned())
    }

    /// Its address, `nats://127.0.0.1:<port>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Its port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops it: with `clean`, SIGTERM (it closes its clients' connections); otherwise
    /// SIGKILL (the connections are cut without a word). Returns once the port is closed.
    pub fn stop(&mut self, clean: bool) -> Result<(), String> {
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
                .map_err(|e| format!("nats-server did not exit: {e}"))?;
        }
        wait_for_port(self.port, false)
    }

    /// Starts it again on the same port and store; returns once it accepts connections.
    pub fn resume(&mut self) -> Result<(), String> {
        let child = Command::new(Self::binary())
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(&self.store)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", Self::binary()))?;
        self.child = Some(child);
        wait_for_port(self.port, true)
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.store);
    }
}
