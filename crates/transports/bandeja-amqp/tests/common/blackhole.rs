//! A TCP proxy in front of the real broker that can turn into a black hole: it keeps the
//! connections open and reads what the client sends, but forwards nothing either way — a
//! broker that hangs without closing anything. For tests of the publish deadline.

#![allow(dead_code, unreachable_pub)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The proxy; it stops accepting when dropped (open connections end with the test's
/// runtime).
pub struct BlackHole {
    port: u16,
    swallowing: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl BlackHole {
    /// A proxy on a free local port forwarding to `upstream` (`host:port`).
    pub async fn start(upstream: &str) -> BlackHole {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let swallowing = Arc::new(AtomicBool::new(false));
        let upstream = upstream.to_owned();
        let flag = swallowing.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pipe(client_read, server_write, flag.clone()));
                tokio::spawn(pipe(server_read, client_write, flag.clone()));
            }
        });
        BlackHole {
            port,
            swallowing,
            task,
        }
    }

    /// The local port to connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// From now on nothing is forwarded (the connections stay open).
    pub fn swallow(&self) {
        self.swallowing.store(true, Ordering::SeqCst);
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    swallowing: Arc<AtomicBool>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if swallowing.load(Ordering::SeqCst) {
            continue;
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}
