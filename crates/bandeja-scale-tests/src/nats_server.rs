//! A `nats-server` process of a test's own (from `NATS_SERVER`, default
//! `/usr/sbin/nats-server`), with JetStream, on a free port of 127.0.0.1 and a store
//! directory of its own, so stopping it disturbs no other test. Stopped and started again
//! on the same store directory, its streams survive; killed when dropped, and its
//! directory removed.

use std::process::Command;

pub use crate::own_server::wait_for_port;
use crate::own_server::OwnServer;

/// A `nats-server` child process.
pub struct NatsServer(OwnServer);

impl NatsServer {
    /// Starts a server on a free port; returns once it accepts connections.
    pub fn start() -> Result<NatsServer, String> {
        let mut server = NatsServer(OwnServer::new("nats-server")?);
        server.resume()?;
        Ok(server)
    }

    /// Its address, `nats://127.0.0.1:<port>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.0.port())
    }

    /// Its port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.0.port()
    }

    /// Stops it: with `clean`, SIGTERM (it closes its clients' connections); otherwise
    /// SIGKILL (the connections are cut without a word). Returns once the port is closed.
    pub fn stop(&mut self, clean: bool) -> Result<(), String> {
        self.0.stop(clean)
    }

    /// Starts it again on the same port and store; returns once it accepts connections.
    pub fn resume(&mut self) -> Result<(), String> {
        let binary =
            std::env::var("NATS_SERVER").unwrap_or_else(|_| "/usr/sbin/nats-server".to_owned());
        let mut command = Command::new(binary);
        command
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.0.port().to_string(),
                "-js",
                "-sd",
            ])
            .arg(self.0.dir());
        self.0.run(command)
    }
}
