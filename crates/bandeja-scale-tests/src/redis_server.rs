//! A `redis-server` process of a test's own (from `REDIS_SERVER`, default
//! `/usr/bin/redis-server`) on a free port of 127.0.0.1, keeping its data in an
//! append-only file of its own directory, synced at every write (`appendfsync always`):
//! stopped (SIGTERM) and started again, its streams and consumer groups survive, as on a
//! Redis run for a message broker. (The machine's shared Redis keeps nothing on disk; its
//! restart loses the streams, which the outbox replay recovers: see the transport's
//! tests.) Killed when dropped, and its directory removed.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::nats_server::wait_for_port;

/// A `redis-server` child process.
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server on a free port; returns once it accepts connections.
    pub fn start() -> Result<RedisServer, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?;
        let dir = std::env::temp_dir().join(format!(
            "bandeja-redis-{port}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let mut server = RedisServer {
            port,
            dir,
            child: None,
        };
        server.resume()?;
        Ok(server)
    }

    fn binary() -> String {
        std::env::var("REDIS_SERVER").unwrap_or_else(|_| "/usr/bin/redis-server".to_owned())
    }

    /// Its address, `redis://127.0.0.1:<port>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops it with SIGTERM (it syncs its append-only file and closes its clients'
    /// connections); returns once the port is closed.
    pub fn stop(&mut self) -> Result<(), String> {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            child
                .wait()
                .map_err(|e| format!("redis-server did not exit: {e}"))?;
        }
        wait_for_port(self.port, false)
    }

    /// Starts it again on the same port and directory (it reloads its append-only file);
    /// returns once it accepts connections.
    pub fn resume(&mut self) -> Result<(), String> {
        let child = Command::new(Self::binary())
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", Self::binary()))?;
        self.child = Some(child);
        wait_for_port(self.port, true)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
