//! What the Kafka tests share: the brokers (librdkafka's mock cluster, started once per
//! test binary on localhost ports, or the brokers of `BANDEJA_KAFKA_BOOTSTRAP`), a prefix
//! per test, fresh SQLite stores.

#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use bandeja_core::transport::Transport;
use bandeja_kafka::{KafkaOptions, KafkaTransport};
use bandeja_sqlite::SqliteStore;
use rdkafka::mocking::MockCluster;

/// The bootstrap servers of the tests' brokers: `BANDEJA_KAFKA_BOOTSTRAP`, or a mock
/// cluster of three brokers that lives as long as the test binary (on a thread of its
/// own: it is not `Sync`, and must outlive every test).
pub fn bootstrap() -> String {
    static SERVERS: OnceLock<String> = OnceLock::new();
    SERVERS
        .get_or_init(|| {
            if let Ok(servers) = std::env::var("BANDEJA_KAFKA_BOOTSTRAP") {
                return servers;
            }
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let cluster = MockCluster::new(3).expect("start librdkafka's mock cluster");
                let _ = sender.send(cluster.bootstrap_servers());
                loop {
                    std::thread::park();
                }
            });
            receiver.recv().expect("the mock cluster's address")
        })
        .clone()
}

/// Logs to the test output, filtered by `RUST_LOG` (nothing by default).
pub fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A fresh prefix.
pub fn namespace() -> String {
    format!("k{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

/// The partition count of the tests' topics: the mock cluster's, which creates a topic
/// when a metadata request asks it to (it does not answer `CreateTopics`).
pub const PARTITIONS: u16 = 4;

/// Whether the tests run against brokers of `BANDEJA_KAFKA_BOOTSTRAP` (a real broker,
/// which answers `CreateTopics`) rather than the mock cluster.
pub fn real_brokers() -> bool {
    std::env::var_os("BANDEJA_KAFKA_BOOTSTRAP").is_some()
}

/// The options of a test: its own prefix, [`PARTITIONS`], short timeouts; the transport
/// creates its topics (`CreateTopics`) on real brokers, and the mock cluster creates them
/// from a metadata request.
pub fn options(prefix: &str) -> KafkaOptions {
    let real = real_brokers();
    KafkaOptions::new(bootstrap())
        .prefix(prefix)
        .partitions(PARTITIONS)
        .create_topics(real)
        .broker_creates_topics(!real)
        .session_timeout(Duration::from_secs(6))
        .request_timeout(Duration::from_secs(10))
}

/// A transport with `options`, failing the test when the brokers are not there.
pub async fn connect(options: KafkaOptions) -> KafkaTransport {
    logs();
    KafkaTransport::connect(options)
        .await
        .unwrap_or_else(|e| panic!("connect to Kafka at {}: {e}", bootstrap()))
}

/// A transport in `namespace`, as the conformance suite wants it.
pub async fn kafka(namespace: String) -> Arc<dyn Transport> {
    Arc::new(connect(options(&namespace)).await)
}

/// A fresh SQLite store in a temporary directory.
pub async fn fresh_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-kafka", SqliteStore::connect).await
}
