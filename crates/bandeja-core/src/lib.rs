#![doc = include_str!("../README.md")]

// The tiers, lowest first: vocabulary, ports, engine, stages, assembly. Each imports only
// from itself and the tiers before it (checked by `tests/tiers.rs`). Their modules are re-exported at the crate root under
// the names adapters and users import (`bandeja_core::store`, `bandeja_core::config`, ...).
mod assembly;
mod engine;
mod ports;
mod stages;
mod vocabulary;

#[cfg(feature = "logging")]
pub mod logging;

pub use assembly::{runtime, testing};
pub(crate) use engine::{
    attempt, claim, conflicts, context, lease, pace, registry, stragglers, timeouts, worker,
};
pub use engine::{fault, telemetry};
pub use ports::{admin, handler, store, transport, wake};
pub use sagas::{Saga, SagaStore};
pub(crate) use stages::{background, dispatch, maintenance};
pub use stages::{emission, processing, reception, sagas};
pub use vocabulary::{
    config, envelope, error, names, record, saga, status, subscriptions, tenant, upcast,
};

pub use config::{
    CompletionMode, Config, ConfigError, ConfigErrorKind, Enabled, HandlerTransaction, Staleness,
    WorkerConfig,
};
pub use emission::{Outbox, RecordedEvents};
pub use envelope::{Command, Direction, Event, Headers, MessageId, Payload};
pub use error::{
    BoxError, BuildError, BuildErrorKind, Error, FailureKind, HandlerError, MessageError,
    MessageErrorKind, Result, StoreError, StoreErrorKind,
};
pub use processing::{CommandHandler, EventBatchHandler, EventHandler, HandlerContext};
pub use record::{BoxKind, MessageKind, MessageRecord, StoredMessage};
pub use runtime::{shutdown_signal, Bandeja, BandejaBuilder, Running};
pub use status::MessageStatus;
pub use store::Store;
pub use tenant::TenantId;
pub use transport::Transport;
pub use upcast::{UpcastError, Upcaster};
#[cfg(feature = "schema")]
pub use vocabulary::schema;
