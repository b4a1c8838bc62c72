//! A `tansu` broker of a test's own (a Kafka-compatible server, from `TANSU`, default
//! `$HOME/.cache/tansu-install/bin/tansu`; `scripts/ci/tansu.sh install` puts it there)
//! on a free port of 127.0.0.1, listening and advertising that address, with the memory
//! storage engine (`memory://tansu/`): its topics and consumer groups live only as long
//! as the process, so it is never stopped in the middle of a run (a kill would lose every
//! topic). Killed when dropped, and its directory removed.

use std::path::PathBuf;
use std::process::Command;

use crate::own_server::OwnServer;

/// A `tansu broker` child process.
pub struct TansuServer(OwnServer);

impl TansuServer {
    /// Starts a broker on a free port; returns once it accepts connections. An error
    /// when the binary is missing says how to install it.
    pub fn start() -> Result<TansuServer, String> {
        let binary = binary()?;
        if !binary.is_file() {
            return Err(format!(
                "no tansu binary at {} (set TANSU to another path): run \
                 `scripts/ci/tansu.sh install`",
                binary.display()
            ));
        }
        let mut server = TansuServer(OwnServer::new("tansu")?);
        let url = format!("tcp://127.0.0.1:{}", server.0.port());
        let mut command = Command::new(binary);
        command
            .arg("broker")
            .args(["--listener-url", &url])
            .args(["--advertised-listener-url", &url])
            .args(["--storage-engine", "memory://tansu/"])
            .current_dir(server.0.dir());
        server.0.run(command)?;
        Ok(server)
    }

    /// Its bootstrap servers, `127.0.0.1:<port>`.
    #[must_use]
    pub fn bootstrap_servers(&self) -> String {
        format!("127.0.0.1:{}", self.0.port())
    }

    /// Its port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.0.port()
    }
}

/// The binary: `TANSU`, or `$HOME/.cache/tansu-install/bin/tansu`.
fn binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("TANSU") {
        return Ok(PathBuf::from(path));
    }
    let home = std::env::var_os("HOME")
        .ok_or("neither TANSU nor HOME is set: cannot find the tansu binary")?;
    Ok(PathBuf::from(home).join(".cache/tansu-install/bin/tansu"))
}
