//! What the tests of this crate share: the server's address, fresh SQLite stores, test
//! transports in a key prefix of their own whose keys are deleted when the test's last
//! transport goes, and a raw connection for what a test does behind the transport's back.
//!
//! Every test needs the Redis at `127.0.0.1:6379` (or `BANDEJA_REDIS_URL`): a server that
//! is not there fails the test, it never skips. Tests share that server with each other
//! and with other developers, so none flushes it: each deletes only its own keys.

#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use bandeja_core::reception::InboxSink;
use bandeja_core::record::MessageKind;
use bandeja_core::store::ReceiveReport;
use bandeja_core::transport::{
    Instant, Outgoing, SubscribeRequest, Subscription, Transport, TransportError,
};
use bandeja_redis::{RedisOptions, RedisTransport};
use bandeja_sqlite::SqliteStore;
use redis::aio::MultiplexedConnection;

/// How long an entry stays with a consumer of a test before another takes it over.
pub const CLAIM_IDLE: Duration = Duration::from_secs(3);

/// The server the tests use: `BANDEJA_REDIS_URL`, or the local Redis.
pub fn url() -> String {
    std::env::var("BANDEJA_REDIS_URL").unwrap_or_else(|_| bandeja_redis::DEFAULT_URL.to_owned())
}

/// A fresh key prefix.
pub fn namespace() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("bandeja-redis-test.{}", &id[..12])
}

/// The options of a test transport on `prefix`: 4 partitions, a short `claim_idle` and
/// short blocking reads.
pub fn options(prefix: &str) -> RedisOptions {
    RedisOptions::new(url())
        .prefix(prefix)
        .partitions(4)
        .claim_idle(CLAIM_IDLE)
        .read_block(Duration::from_millis(250))
}

/// Logs to the test output, filtered by `RUST_LOG` (nothing by default).
pub fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A fresh, migrated SQLite store.
pub async fn fresh_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-redis", SqliteStore::connect).await
}

/// A transport with `options`, failing the test when the server is not there.
pub async fn connect(options: RedisOptions) -> RedisTransport {
    logs();
    RedisTransport::connect(options)
        .await
        .unwrap_or_else(|e| panic!("connect to Redis at {} (redis-server running?): {e}", url()))
}

/// A raw connection of the client library, for what tests do behind the transport.
pub async fn raw() -> MultiplexedConnection {
    redis::Client::open(url())
        .expect("the Redis URL")
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("connect to Redis at {}: {e}", url()))
}

/// The keys of `prefix` (`SCAN … MATCH <prefix>.*`).
pub async fn keys(connection: &mut MultiplexedConnection, prefix: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, page): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}.*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(connection)
            .await
            .expect("SCAN");
        keys.extend(page);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

/// Deletes every key of `prefix`; returns how many there were.
pub async fn delete_keys(prefix: &str) -> usize {
    let mut connection = raw().await;
    let keys = keys(&mut connection, prefix).await;
    if !keys.is_empty() {
        let _: i64 = redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut connection)
            .await
            .expect("DEL");
    }
    keys.len()
}

/// Deletes the keys of a prefix when dropped (on a thread of its own: `Drop` cannot await,
/// and the test's runtime may be ending).
pub struct Cleanup {
    prefix: String,
}

impl Cleanup {
    pub fn of(prefix: &str) -> Cleanup {
        Cleanup {
            prefix: prefix.to_owned(),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let prefix = self.prefix.clone();
        let cleanup = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                let Ok(client) = redis::Client::open(url()) else {
                    return;
                };
                let Ok(mut connection) = client.get_multiplexed_async_connection().await else {
                    return;
                };
                let keys = keys(&mut connection, &prefix).await;
                if !keys.is_empty() {
                    let _: redis::RedisResult<i64> = redis::cmd("DEL")
                        .arg(&keys)
                        .query_async(&mut connection)
                        .await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

/// A transport that keeps its prefix's [`Cleanup`]: the keys go when the test's last
/// transport does.
pub struct Guarded {
    pub inner: RedisTransport,
    _cleanup: Arc<Cleanup>,
}

/// A transport on `prefix` sharing one cleanup per prefix.
pub async fn guarded(prefix: &str, options: RedisOptions) -> Guarded {
    static CLEANUPS: OnceLock<Mutex<HashMap<String, Weak<Cleanup>>>> = OnceLock::new();
    let inner = connect(options).await;
    let cleanup = {
        let mut cleanups = CLEANUPS
            .get_or_init(Mutex::default)
            .lock()
            .expect("cleanups");
        cleanups.retain(|_, cleanup| cleanup.strong_count() > 0);
        match cleanups.get(prefix).and_then(Weak::upgrade) {
            Some(cleanup) => cleanup,
            None => {
                let cleanup = Arc::new(Cleanup::of(prefix));
                cleanups.insert(prefix.to_owned(), Arc::downgrade(&cleanup));
                cleanup
            }
        }
    };
    Guarded {
        inner,
        _cleanup: cleanup,
    }
}

/// A test transport on `prefix` (see [`options`]), its keys deleted after the test.
pub async fn transport(prefix: &str) -> Arc<dyn Transport> {
    Arc::new(guarded(prefix, options(prefix)).await)
}

/// [`transport`] as the conformance suite wants it: the services of one test share the
/// suite's namespace, under a prefix that says whose keys these are.
pub async fn redis(namespace: String) -> Arc<dyn Transport> {
    transport(&format!("bandeja-redis-test.{namespace}")).await
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

/// A sink that stores, then never returns: a process that died between storing a batch
/// and acknowledging it.
pub struct HangsAfterStoring {
    inner: Arc<dyn InboxSink>,
    pub stored: Arc<Mutex<usize>>,
}

#[async_trait]
impl InboxSink for HangsAfterStoring {
    async fn addresses(&self, kind: MessageKind) -> bandeja_core::Result<Option<Vec<String>>> {
        self.inner.addresses(kind).await
    }

    async fn accept(
        &self,
        kind: MessageKind,
        bodies: &[&[u8]],
    ) -> bandeja_core::Result<ReceiveReport> {
        self.inner.accept(kind, bodies).await?;
        if let Ok(mut stored) = self.stored.lock() {
            *stored += bodies.len();
        }
        std::future::pending().await
    }
}

/// A transport whose consumers hang after storing their first batch.
pub struct Hanging {
    pub inner: Arc<dyn Transport>,
    pub stored: Arc<Mutex<usize>>,
}

#[async_trait]
impl Transport for Hanging {
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
        let sink = Arc::new(HangsAfterStoring {
            inner: sink,
            stored: self.stored.clone(),
        });
        self.inner.subscribe(request, sink).await
    }
}

/// How many entries the group `group` has pending on `stream` (`XPENDING` summary).
pub async fn pending(stream: &str, group: &str) -> i64 {
    let mut connection = raw().await;
    let value: redis::Value = redis::cmd("XPENDING")
        .arg(stream)
        .arg(group)
        .query_async(&mut connection)
        .await
        .expect("XPENDING");
    match value {
        redis::Value::Array(items) => match items.first() {
            Some(redis::Value::Int(n)) => *n,
            _ => 0,
        },
        _ => 0,
    }
}
