//! What the tests of this crate share: the broker's address, fresh SQLite stores and
//! transports in a namespace of their own whose queues and exchanges go away after the
//! test.

#![allow(dead_code, unreachable_pub)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bandeja_amqp::{AmqpOptions, AmqpTransport};
use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use bandeja_core::transport::Transport;
use bandeja_sqlite::SqliteStore;
use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties, ExchangeKind};

/// How long the queues of a test outlive their last consumer.
pub const QUEUE_EXPIRES: Duration = Duration::from_secs(60);

/// The broker the tests use: `BANDEJA_AMQP_URL`, or the local RabbitMQ.
pub fn url() -> String {
    std::env::var("BANDEJA_AMQP_URL").unwrap_or_else(|_| bandeja_amqp::DEFAULT_URL.to_owned())
}

/// A fresh namespace (exchange and queue prefix).
pub fn namespace() -> String {
    format!("bandeja-amqp-test-{}", uuid::Uuid::new_v4().simple())
}

/// The options of a test transport in `namespace`: 4 partitions, expiring queues,
/// auto-delete exchanges.
pub fn options(namespace: &str) -> AmqpOptions {
    AmqpOptions::default()
        .url(url())
        .prefix(namespace)
        .partitions(4)
        .queue_expires(Some(QUEUE_EXPIRES))
        .auto_delete_exchanges(true)
}

/// Logs to the test output, filtered by `RUST_LOG` (nothing by default).
pub fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A transport in `namespace` (see [`options`]).
pub async fn transport(namespace: &str) -> AmqpTransport {
    logs();
    let transport = AmqpTransport::connect(options(namespace))
        .await
        .unwrap_or_else(|e| panic!("connect to RabbitMQ at {}: {e}", url()));
    anchor(namespace).await;
    transport
}

/// [`transport`] as the conformance suite wants it.
pub async fn amqp(namespace: String) -> Arc<dyn Transport> {
    Arc::new(transport(&namespace).await)
}

/// A connection of the broker's own client (lapin), for what the tests do behind the
/// transport's back.
pub async fn raw_connection() -> Connection {
    Connection::connect(&url(), ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| panic!("connect to RabbitMQ at {}: {e}", url()))
}

/// Binds an exclusive queue of this test process to both exchanges of `namespace`, once:
/// an auto-delete exchange is deleted when its last queue is unbound, which never happens
/// to an exchange that never had one. The queue goes when the process (or the test's
/// runtime) ends; the expiring queues of the test go a minute after their last consumer,
/// and the exchanges with them.
async fn anchor(namespace: &str) {
    static ANCHORED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    static CONNECTIONS: OnceLock<Mutex<Vec<Connection>>> = OnceLock::new();
    let first = ANCHORED
        .get_or_init(Mutex::default)
        .lock()
        .expect("anchors")
        .insert(namespace.to_owned());
    if !first {
        return;
    }
    let connection = raw_connection().await;
    let channel = connection.create_channel().await.expect("channel");
    let queue = channel
        .queue_declare(
            "".into(),
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .expect("declare the anchor queue");
    for kind in ["events", "commands"] {
        let exchange = format!("{namespace}.{kind}");
        channel
            .exchange_declare(
                exchange.as_str().into(),
                ExchangeKind::Direct,
                ExchangeDeclareOptions {
                    durable: true,
                    auto_delete: true,
                    ..ExchangeDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("declare the exchange");
        channel
            .queue_bind(
                queue.name().clone(),
                exchange.as_str().into(),
                "anchor".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("bind the anchor queue");
    }
    CONNECTIONS
        .get_or_init(Mutex::default)
        .lock()
        .expect("anchor connections")
        .push(connection);
}

/// A fresh, migrated SQLite store.
pub async fn fresh_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-amqp", SqliteStore::connect).await
}
