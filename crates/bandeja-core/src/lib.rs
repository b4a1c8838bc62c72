#![doc = include_str!("../README.md")]

pub mod admin;
pub(crate) mod attempt;
pub(crate) mod claim;
pub mod config;
pub(crate) mod dispatch;
pub mod emission;
pub mod envelope;
pub mod error;
pub mod fault;
pub(crate) mod lease;
pub(crate) mod maintenance;
pub mod processing;
pub mod reception;
pub mod record;
pub mod runtime;
pub mod status;
pub mod store;
pub mod subscriptions;
pub mod telemetry;
pub mod tenant;
pub mod testing;
pub mod transport;
pub mod wake;
pub(crate) mod worker;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use config::{
    CompletionMode, Config, ConfigError, Enabled, Group, HandlerTransaction, Staleness,
    WorkerConfig,
};
pub use emission::{Outbox, RecordedEvents};
pub use envelope::{Command, Direction, Event, Headers, MessageId, Payload};
pub use error::{BoxError, Error, FailureKind, HandlerError, Result, StoreError, StoreErrorKind};
pub use processing::{CommandHandler, EventBatchHandler, EventHandler, HandlerContext};
pub use record::{BoxKind, MessageKind, MessageRecord, StoredMessage};
pub use runtime::{Bandeja, BandejaBuilder, Running};
pub use status::MessageStatus;
pub use store::Store;
pub use tenant::TenantId;
pub use transport::Transport;
