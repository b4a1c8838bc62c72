//! # bandeja
//!
//! Reliable messaging for Rust: the transactional **outbox** (a message is stored in the
//! same database transaction as the business change, then relayed) and the idempotent
//! **inbox** (a received message is stored with dedup by id, then handed to its handler
//! inside the transaction that marks it done). At least once on the wire, exactly once in
//! effect.
//!
//! This facade re-exports the core ([`bandeja_core`]) and the store adapters behind cargo
//! features: `sqlite` (default, the embedded store) and `postgres`; and the broker
//! transports: `nats` (NATS JetStream) and `amqp` (RabbitMQ).
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

pub use async_trait::async_trait;
pub use bandeja_core::*;

/// The SQLite store (feature `sqlite`).
#[cfg(feature = "sqlite")]
pub mod sqlite {
    pub use bandeja_sqlite::*;
}

/// The PostgreSQL store (feature `postgres`).
#[cfg(feature = "postgres")]
pub mod postgres {
    pub use bandeja_postgres::*;
}

/// The NATS JetStream transport (feature `nats`).
#[cfg(feature = "nats")]
pub mod nats {
    pub use bandeja_nats::*;
}

/// The RabbitMQ transport (feature `amqp`).
#[cfg(feature = "amqp")]
pub mod amqp {
    pub use bandeja_amqp::*;
}

/// The names most applications use.
pub mod prelude {
    pub use bandeja_core::{
        Bandeja, Command, CommandHandler, Config, Event, EventHandler, HandlerContext,
        HandlerError, MessageStatus, Outbox, Payload, RecordedEvents, Store, TenantId,
    };
}
