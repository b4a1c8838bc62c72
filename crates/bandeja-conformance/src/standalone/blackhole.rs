//! A TCP proxy in front of the real broker that can turn into a black hole: it keeps the
//! connections open and reads what the client sends, but forwards nothing either way — a
//! broker that hangs without closing anything — and the transport check run through it:
//! a publish returns at its deadline ([`publish_returns_at_its_deadline`]).

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

/// A publish returns at its deadline when the broker hangs: `transport` (connected through
/// `proxy`) publishes one message normally, then `proxy` swallows everything and a publish
/// of three with a 500 ms deadline must return within a second of it, every message
/// unavailable with [`PublishDeadline`](bandeja_core::transport::PublishDeadline), instead of
/// waiting for acknowledgements that never come.
pub async fn publish_returns_at_its_deadline(
    transport: &dyn bandeja_core::transport::Transport,
    proxy: &BlackHole,
) {
    use std::time::Duration;

    use bandeja_core::envelope::Event;
    use bandeja_core::record::{MessageKind, MessageRecord};
    use bandeja_core::transport::{wire, Instant, Outgoing, PublishDeadline, TransportErrorKind};

    let records: Vec<MessageRecord> = (0..3)
        .map(|n| {
            MessageRecord::from_event(&Event::new(
                "Ping",
                format!("k{n}"),
                crate::fixtures::Ping { n },
            ))
            .expect("record")
        })
        .collect();
    let outgoing: Vec<Outgoing<'_>> = records
        .iter()
        .map(|record| Outgoing {
            record,
            address: &record.message_type,
            partition: 0,
            body: wire::encode(record, Some("orders")),
        })
        .collect();
    let through = transport
        .publish(
            MessageKind::Event,
            &outgoing[..1],
            Instant::now() + Duration::from_secs(30),
        )
        .await;
    assert!(
        through[0].is_ok(),
        "published through the proxy: {through:?}"
    );

    proxy.swallow();
    let started = Instant::now();
    let timeout = Duration::from_millis(500);
    let publishing = transport.publish(MessageKind::Event, &outgoing, started + timeout);
    let results = tokio::time::timeout(Duration::from_secs(10), publishing)
        .await
        .expect("the publish returned (it waited for the black hole)");
    let took = started.elapsed();
    assert!(
        took >= timeout && took < timeout + Duration::from_secs(1),
        "returned at the deadline, not after {took:?}"
    );
    assert_eq!(results.len(), 3);
    for result in &results {
        let error = result
            .as_ref()
            .expect_err("no acknowledgement from a black hole");
        assert_eq!(error.kind(), TransportErrorKind::Unavailable, "{error}");
        assert!(
            error.get_ref().downcast_ref::<PublishDeadline>().is_some(),
            "{error:?}"
        );
    }
}
