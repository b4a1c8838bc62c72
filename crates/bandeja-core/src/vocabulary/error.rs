//! The core error type and the error kinds that let a worker decide retry or FAILED.

use std::error::Error as StdError;

use crate::config::ConfigError;
use crate::status::TransitionError;

mod store;
mod transport;

pub use store::{FailureKind, HandlerError, StoreError, StoreErrorKind};
pub use transport::{NoRoute, TransportError, TransportErrorKind};

/// A boxed error source.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in bandeja's core.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `Command::to` / `Command::to_self` were called outside a tenant scope.
    #[error("no tenant in context: run this inside `bandeja::tenant::scope(tenant, ...)` so the command knows its source tenant")]
    NoTenant,
    /// A tenant id that cannot be used (the id, cut to 128 characters).
    #[error(
        "invalid tenant id {0:?}: a tenant id is 1 to 128 bytes of text without control characters"
    )]
    InvalidTenant(String),
    /// An illegal status transition.
    #[error(transparent)]
    Transition(#[from] TransitionError),
    /// Bad configuration (names the key).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A payload could not be serialized to JSON.
    #[error("cannot serialize the payload of `{message_type}` to JSON: {source}")]
    Serialize {
        /// The message type.
        message_type: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// A message that breaks an envelope rule (empty type, missing aggregate id, bad header...).
    #[error("invalid message: {0}")]
    InvalidMessage(String),
    /// Two subscribers registered with the same name for the same message type.
    #[error("duplicate subscriber `{subscriber}` for message type `{message_type}`: give each subscriber a unique name")]
    DuplicateSubscriber {
        /// The message type.
        message_type: String,
        /// The repeated name.
        subscriber: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The broker transport failed (unreachable, or refused a subscription).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A command whose target service has no topic in `commands.topics`.
    #[error(transparent)]
    NoRoute(#[from] NoRoute),
    /// A worker task ended abnormally.
    #[error("worker `{worker}` stopped abnormally: {reason}")]
    Worker {
        /// Which worker.
        worker: String,
        /// Why.
        reason: String,
    },
}

/// `name` for a one-line message: control characters escaped, cut to 64 characters.
pub(crate) fn shown(name: &str) -> String {
    const MOST: usize = 64;
    let escaped: String = name.escape_debug().collect();
    match escaped.char_indices().nth(MOST) {
        Some((at, _)) => format!("{}…", &escaped[..at]),
        None => escaped,
    }
}

#[cfg(test)]
mod tests;
