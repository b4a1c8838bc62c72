//! Two services, two databases, NATS JetStream between them (issue: brokers, items 5 and
//! 6): a producer process emits 10,000 events and 1,000 commands, a consumer process
//! handles them; in the middle of the run the `nats-server` process is stopped for 12 s
//! and started again on the same store directory. Every message is handled exactly once in
//! effect; see `common::pair::run` for every check.
//!
//! The test runs its own `nats-server` (from `NATS_SERVER`, default `/usr/sbin/nats-server`)
//! on a free port with a store directory of its own, so stopping it disturbs no other test.

mod common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use common::pair::{self, wait_for_port, Broker};

struct NatsServer {
    port: u16,
    store: PathBuf,
    child: Option<Child>,
}

impl NatsServer {
    fn new() -> NatsServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let store =
            std::env::temp_dir().join(format!("bandeja-nats-{port}-{}", std::process::id()));
        let mut server = NatsServer {
            port,
            store,
            child: None,
        };
        server.start();
        server
    }

    fn binary() -> String {
        std::env::var("NATS_SERVER").unwrap_or_else(|_| "/usr/sbin/nats-server".to_owned())
    }
}

impl Broker for NatsServer {
    fn transport(&self) -> &'static str {
        "nats"
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            child.wait().expect("nats-server exits");
        }
        wait_for_port(self.port, false);
    }

    fn start(&mut self) {
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
            .unwrap_or_else(|e| panic!("start {}: {e}", Self::binary()));
        self.child = Some(child);
        wait_for_port(self.port, true);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_services_over_nats_survive_a_broker_restart() {
    let mut server = NatsServer::new();
    pair::run(&mut server).await;
}
