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
//! `postgres`, the broker transports `nats` (NATS JetStream) and `amqp` (RabbitMQ). Each
//! store module brings its handler context alias (`bandeja::sqlite::Context<'_>`) and the
//! `sqlx` it is built on (`bandeja::sqlite::sqlx`).
//!
//! ```no_run
//! use bandeja::prelude::*;
//! use bandeja::sqlite::SqliteStore;
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct OrderPlaced { order_id: i64 }
//! impl Payload for OrderPlaced { const TYPE: &'static str = "shop.OrderPlaced"; }
//!
//! struct Mailer;
//! impl EventHandler<SqliteStore, OrderPlaced> for Mailer {
//!     async fn handle(&self, ctx: &mut HandlerContext<'_, SqliteStore>, event: Event<OrderPlaced>) -> Result<(), HandlerError> {
//!         sqlx::query("INSERT INTO mails (order_id) VALUES (?)").bind(event.payload.order_id).execute(ctx.conn()).await?;
//!         Ok(())
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = SqliteStore::connect("sqlite://shop.db").await?;
//! store.migrate().await?;
//! let bandeja = Bandeja::builder(store.clone()).on_event("mailer", Mailer).build()?;
//! let running = bandeja.start().await?;
//!
//! let mut tx = store.pool().begin().await?;
//! // ... your business writes through &mut *tx ...
//! bandeja.outbox().emit(&mut tx, &Event::new("Order", "42", OrderPlaced { order_id: 42 })).await?;
//! tx.commit().await?; // the event leaves only now, and surely
//! running.shutdown().await;
//! # Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use bandeja_core::{
    admin, config, envelope, error, record, status, store, telemetry, tenant, testing, transport,
};
pub use bandeja_core::{
    shutdown_signal, Bandeja, BandejaBuilder, BoxError, BoxKind, Command, CommandHandler,
    CompletionMode, Config, ConfigError, Direction, Enabled, Error, Event, EventBatchHandler,
    EventHandler, FailureKind, HandlerContext, HandlerError, HandlerTransaction, Headers,
    MessageId, MessageKind, MessageRecord, MessageStatus, Outbox, Payload, RecordedEvents, Result,
    Running, Staleness, Store, StoreError, StoreErrorKind, StoredMessage, TenantId, Transport,
    WorkerConfig,
};

/// Named crash points for crash tests (feature `fault-injection`): never in production
/// builds.
#[cfg(feature = "fault-injection")]
#[cfg_attr(docsrs, doc(cfg(feature = "fault-injection")))]
pub use bandeja_core::fault;

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

/// The names most applications use.
pub mod prelude {
    pub use bandeja_core::{
        Bandeja, Command, CommandHandler, Config, Event, EventBatchHandler, EventHandler,
        HandlerContext, HandlerError, MessageStatus, Outbox, Payload, RecordedEvents, Running,
        Store, TenantId,
    };
}
