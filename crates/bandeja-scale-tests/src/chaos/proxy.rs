//! A TCP proxy between the workers and the broker that can partition them: while
//! partitioned it stops moving bytes in both directions but keeps every connection open —
//! no FIN, no RST, nothing: what a dead switch or a dropped route looks like to both ends.
//! Once the socket buffers fill, writers block; only the clients' own timeouts and pings
//! can notice. When the partition heals, the bytes held up flow again.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A running proxy; stops (dropping every connection) when dropped.
pub(crate) struct PartitionProxy {
    port: u16,
    partitioned: watch::Sender<bool>,
    accept: tokio::task::JoinHandle<()>,
}

impl PartitionProxy {
    /// Listens on a free port of 127.0.0.1 and forwards every connection to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> io::Result<PartitionProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let (partitioned, watching) = watch::channel(false);
        let accept = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let watching = watching.clone();
                connections.spawn(async move {
                    // A broker that is down refuses the proxy: the client sees a close,
                    // as it would connecting directly.
                    if let Ok(server) = TcpStream::connect(upstream).await {
                        forward_both(client, server, watching).await;
                    }
                });
            }
        });
        Ok(PartitionProxy {
            port,
            partitioned,
            accept,
        })
    }

    /// The address clients should use instead of the broker's.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Starts (`true`) or heals (`false`) the partition.
    pub(crate) fn partition(&self, on: bool) {
        self.partitioned.send_replace(on);
    }
}

impl Drop for PartitionProxy {
    fn drop(&mut self) {
        // Aborting the accept task drops its JoinSet, which aborts every connection.
        self.accept.abort();
    }
}

/// Moves bytes both ways until either side closes.
async fn forward_both(client: TcpStream, server: TcpStream, partitioned: watch::Receiver<bool>) {
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    tokio::select! {
        () = forward(client_read, server_write, partitioned.clone()) => {}
        () = forward(server_read, client_write, partitioned) => {}
    }
}

/// Copies `from` to `to`, holding still (reading nothing) while partitioned.
async fn forward(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut partitioned: watch::Receiver<bool>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        if partitioned.wait_for(|on| !*on).await.is_err() {
            return;
        }
        let n = tokio::select! {
            read = from.read(&mut buffer) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            // A partition starting while this waits for bytes: read nothing more.
            _ = partitioned.wait_for(|on| *on) => continue,
        };
        // Bytes read before a partition began were already on their way: deliver them.
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}
