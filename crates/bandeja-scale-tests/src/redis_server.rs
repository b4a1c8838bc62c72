//! A `redis-server` process of a test's own (from `REDIS_SERVER`, default
//! `/usr/bin/redis-server`) on a free port of 127.0.0.1, keeping its data in an
//! append-only file of its own directory, synced at every write (`appendfsync always`):
//! stopped (SIGTERM) and started again, its streams and consumer groups survive, as on a
//! Redis run for a message broker. (The machine's shared Redis keeps nothing on disk; its
//! restart loses the streams, which the outbox replay recovers: see the transport's
//! tests.) Killed when dropped, and its directory removed.

use std::process::Command;

use crate::own_server::OwnServer;

/// A `redis-server` child process.
pub struct RedisServer(OwnServer);

impl RedisServer {
    /// Starts a server on a free port; returns once it accepts connections.
    pub fn start() -> Result<RedisServer, String> {
        let mut server = RedisServer(OwnServer::new("redis-server")?);
        server.resume()?;
        Ok(server)
    }

    /// Its address, `redis://127.0.0.1:<port>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.0.port())
    }

    /// Stops it with SIGTERM (it syncs its append-only file and closes its clients'
    /// connections); returns once the port is closed.
    pub fn stop(&mut self) -> Result<(), String> {
        self.0.stop(true)
    }

    /// Kills it with SIGKILL (no sync, its clients' connections cut without a close);
    /// returns once the port is closed. What `appendfsync always` wrote survives.
    pub fn kill(&mut self) -> Result<(), String> {
        self.0.stop(false)
    }

    /// Its port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.0.port()
    }

    /// Starts it again on the same port and directory (it reloads its append-only file);
    /// returns once it accepts connections.
    pub fn resume(&mut self) -> Result<(), String> {
        let binary =
            std::env::var("REDIS_SERVER").unwrap_or_else(|_| "/usr/bin/redis-server".to_owned());
        let mut command = Command::new(binary);
        command
            .args(["--bind", "127.0.0.1", "--port", &self.0.port().to_string()])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .arg("--dir")
            .arg(self.0.dir());
        self.0.run(command)
    }
}
