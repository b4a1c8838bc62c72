//! # bandeja
//!
//! Reliable messaging for Rust: the transactional **outbox** (a message is stored in the
//! same database transaction as the business change, then relayed) and the idempotent
//! **inbox** (a received message is stored with dedup by id, then handed to its handler
//! inside the transaction that marks it done). At least once on the wire, exactly once in
//! effect.
//!
//! This facade re-exports what applications use from the core ([`bandeja_core`]), and the
//! adapters behind cargo features: the stores `sqlite` (default, the embedded store) and
//! `postgres`, the broker transports `nats` (NATS JetStream), `amqp` (RabbitMQ),
//! `redis` (Redis Streams) and `kafka` (Kafka, on librdkafka built from source). Each
//! store module brings its handler context alias (`bandeja::sqlite::Context<'_>`) and the
//! `sqlx` it is built on (`bandeja::sqlite::sqlx`).
//!
//! The first program (`examples/hello`, also the README's quickstart): one event emitted
//! through the caller's transaction, one handler that prints it, then a graceful exit.
//!
//! ```
//! //! Hello, bandeja: emit one event in a transaction, handle it, exit.
//! use bandeja::prelude::*;
//! use bandeja::sqlite::{Context, SqliteStore};
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Greeted {
//!     to: String,
//! }
//! impl Payload for Greeted {
//!     const TYPE: &'static str = "hello.Greeted";
//! }
//!
//! static HANDLED: tokio::sync::Notify = tokio::sync::Notify::const_new();
//!
//! struct Greeter;
//! impl EventHandler<SqliteStore, Greeted> for Greeter {
//!     async fn handle(&self, _: &mut Context<'_>, event: Event<Greeted>) -> Result<(), HandlerError> {
//!         println!("hello, {}!", event.payload.to);
//!         HANDLED.notify_one();
//!         Ok(())
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let store = SqliteStore::connect("sqlite::memory:").await?;
//!     store.migrate().await?;
//!     // No initial delay, short polling (the spec's defaults wait 2 s and 10 s first).
//!     let bandeja = Bandeja::builder(store.clone())
//!         .config(Config::development())
//!         .on_event("greeter", Greeter)
//!         .build()?;
//!     let running = bandeja.start().await?;
//!
//!     let mut tx = store.pool().begin().await?;
//!     // ... your business writes through &mut *tx ...
//!     let event = Event::new("Greeting", "1", Greeted { to: "world".into() });
//!     bandeja.outbox().emit(&mut tx, &event).await?;
//!     tx.commit().await?; // the event leaves only now, and surely
//!
//!     running.run_until(HANDLED.notified()).await; // then a graceful shutdown
//!     Ok(())
//! }
//! ```
//!
//! A service ends its `main` with `running.run_until_signal().await` (Ctrl-C or SIGTERM,
//! then a graceful shutdown) instead.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use bandeja_core::{
    admin, config, envelope, error, record, saga, sagas, status, store, telemetry, tenant, testing,
    transport, upcast,
};
pub use bandeja_core::{
    shutdown_signal, Bandeja, BandejaBuilder, BoxError, BoxKind, BuildError, BuildErrorKind,
    Command, CommandHandler, CompletionMode, Config, ConfigError, ConfigErrorKind, Direction,
    Enabled, Error, Event, EventBatchHandler, EventHandler, FailureKind, HandlerContext,
    HandlerError, HandlerTransaction, Headers, MessageError, MessageErrorKind, MessageId,
    MessageKind, MessageRecord, MessageStatus, Outbox, Payload, RecordedEvents, Result, Running,
    Saga, SagaStore, Staleness, Store, StoreError, StoreErrorKind, StoredMessage, TenantId,
    Transport, UpcastError, Upcaster, WorkerConfig,
};

/// Named crash points for crash tests (feature `fault-injection`): never in production
/// builds.
#[cfg(feature = "fault-injection")]
#[cfg_attr(docsrs, doc(cfg(feature = "fault-injection")))]
pub use bandeja_core::fault;

/// The logging set-up of bandeja's binaries (feature `logging`): `BANDEJA_LOG`,
/// `BANDEJA_LOG_FORMAT` (`text` or `json`), lines on stderr.
#[cfg(feature = "logging")]
#[cfg_attr(docsrs, doc(cfg(feature = "logging")))]
pub use bandeja_core::logging;

/// The JSON Schemas of payloads and their compatibility check (feature `schema`): a
/// [`SchemaRegistry`](schema::SchemaRegistry) of the application's payload types, its
/// exported [`SchemaSnapshot`](schema::SchemaSnapshot), and [`check`](schema::check), what
/// `bandeja schema check` runs.
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub use bandeja_core::schema;

/// schemars (feature `schema`), for `#[derive(bandeja::schemars::JsonSchema)]` on payload
/// types with `#[schemars(crate = "bandeja::schemars")]`, without a dependency of one's own.
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub use bandeja_core::schema::schemars;

/// The SQLite store (feature `sqlite`): [`SqliteStore`](sqlite::SqliteStore), its handler
/// context [`Context`](sqlite::Context) and its [`sqlx`](sqlite::sqlx).
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub mod sqlite {
    pub use bandeja_sqlite::*;
}

/// The PostgreSQL store (feature `postgres`): [`PgStore`](postgres::PgStore), its handler
/// context [`Context`](postgres::Context) and its [`sqlx`](postgres::sqlx).
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod postgres {
    pub use bandeja_postgres::*;
}

/// The NATS JetStream transport (feature `nats`).
#[cfg(feature = "nats")]
#[cfg_attr(docsrs, doc(cfg(feature = "nats")))]
pub mod nats {
    pub use bandeja_nats::*;
}

/// The RabbitMQ transport (feature `amqp`).
#[cfg(feature = "amqp")]
#[cfg_attr(docsrs, doc(cfg(feature = "amqp")))]
pub mod amqp {
    pub use bandeja_amqp::*;
}

/// The Redis Streams transport (feature `redis`).
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis {
    pub use bandeja_redis::*;
}

/// The Kafka transport (feature `kafka`).
#[cfg(feature = "kafka")]
#[cfg_attr(docsrs, doc(cfg(feature = "kafka")))]
pub mod kafka {
    pub use bandeja_kafka::*;
}

/// The names most applications use.
pub mod prelude {
    pub use bandeja_core::{
        Bandeja, Command, CommandHandler, Config, Event, EventBatchHandler, EventHandler,
        HandlerContext, HandlerError, MessageStatus, Outbox, Payload, RecordedEvents, Running,
        Store, TenantId,
    };
}
