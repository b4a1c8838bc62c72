//! What the test files share: a fresh SQLite store per service, the real server's address,
//! and a guard that deletes a test's streams when its last transport is dropped.

#![allow(dead_code)]

pub(crate) mod inventory;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use bandeja_core::reception::InboxSink;
use bandeja_core::transport::{
    Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
};
use bandeja_core::MessageKind;
use bandeja_nats::{NatsOptions, NatsTransport};
use bandeja_sqlite::SqliteStore;

/// The server every test talks to (a test fails when it is not there).
pub(crate) const URL: &str = "nats://127.0.0.1:4222";

/// A fresh, migrated SQLite store in its own directory.
pub(crate) async fn fresh_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-nats", SqliteStore::connect).await
}

/// The options of a test: its own prefix, short waits.
pub(crate) fn options(prefix: &str) -> NatsOptions {
    NatsOptions::new(URL)
        .prefix(prefix)
        .partitions(4)
        .ack_wait(Duration::from_secs(2))
        .fetch_wait(Duration::from_millis(200))
        .max_age(Duration::from_secs(60 * 60))
}

/// A fresh prefix.
pub(crate) fn namespace() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("n{}", &id[..8])
}

/// Deletes the two streams of a prefix when dropped (on a thread of its own: `Drop` cannot
/// await, and the test's runtime may be ending).
pub(crate) struct Streams {
    names: [String; 2],
}

impl Streams {
    pub(crate) fn of(transport: &NatsTransport) -> Self {
        Streams {
            names: [
                transport.stream(MessageKind::Event),
                transport.stream(MessageKind::Command),
            ],
        }
    }
}

impl Drop for Streams {
    fn drop(&mut self) {
        let names = self.names.clone();
        let cleanup = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                let Ok(client) = async_nats::connect(URL).await else {
                    return;
                };
                let jetstream = async_nats::jetstream::new(client);
                for name in names {
                    let _ = jetstream.delete_stream(&name).await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

/// A transport that keeps its namespace's [`Streams`] guard: the streams go when the
/// test's last transport does.
pub(crate) struct Guarded {
    inner: NatsTransport,
    _streams: Arc<Streams>,
}

/// The transport of a namespace, sharing one cleanup guard per namespace.
pub(crate) async fn guarded(namespace: String) -> Arc<dyn Transport> {
    static GUARDS: OnceLock<Mutex<HashMap<String, Weak<Streams>>>> = OnceLock::new();
    let inner = NatsTransport::connect(options(&namespace))
        .await
        .expect("connect to NATS at 127.0.0.1:4222 (nats-server -js)");
    let streams = {
        let mut guards = GUARDS.get_or_init(Mutex::default).lock().expect("guards");
        guards.retain(|_, guard| guard.strong_count() > 0);
        match guards.get(&namespace).and_then(Weak::upgrade) {
            Some(streams) => streams,
            None => {
                let streams = Arc::new(Streams::of(&inner));
                guards.insert(namespace, Arc::downgrade(&streams));
                streams
            }
        }
    };
    Arc::new(Guarded {
        inner,
        _streams: streams,
    })
}

#[async_trait]
impl Transport for Guarded {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn partitions(&self) -> u16 {
        self.inner.partitions()
    }
    async fn publish(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> Vec<Result<(), TransportError>> {
        self.inner.publish(kind, messages, deadline).await
    }
    async fn subscribe(
        &self,
        request: SubscribeRequest,
        sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        self.inner.subscribe(request, sink).await
    }
}

/// The name of the consumer generation a partition is consumed from now: `base`, or the
/// newest `base_g<N>` (the transport replaces a partition's consumer when it rewinds it).
pub(crate) async fn partition_consumer(stream: &str, base: &str) -> String {
    use futures::TryStreamExt;
    let client = async_nats::connect(URL).await.expect("connect");
    let names: Vec<String> = async_nats::jetstream::new(client)
        .get_stream_no_info(stream)
        .await
        .expect("the stream")
        .consumer_names()
        .try_collect()
        .await
        .expect("the stream's consumers");
    let generation = |name: &String| -> Option<u64> {
        if name == base {
            return Some(0);
        }
        name.strip_prefix(base)?.strip_prefix("_g")?.parse().ok()
    };
    names
        .iter()
        .filter_map(|name| generation(name).map(|g| (g, name.clone())))
        .max()
        .map(|(_, name)| name)
        .unwrap_or_else(|| panic!("no consumer of {base} on {stream}: {names:?}"))
}
