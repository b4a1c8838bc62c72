//! The core error type and the typed errors inside it, each with a kind that lets the caller
//! decide (retry, FAILED, fix the wiring) without parsing text.
//!
//! Every error prints one short sentence saying what is wrong. What to do about it is
//! [`Error::hint`] (and the `hint()` of each error type), so a program or a command line can
//! print it on a line of its own.

use std::error::Error as StdError;

use crate::config::ConfigError;
use crate::status::TransitionError;

mod build;
mod message;
mod serialize;
mod store;
mod transport;

pub use build::{BuildError, BuildErrorKind};
pub use message::{MessageError, MessageErrorKind};
pub use serialize::SerializeError;
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
    #[error("no tenant in context")]
    NoTenant,
    /// A tenant id that cannot be used (the id, cut to 128 characters).
    #[error("invalid tenant id `{}`", shown(.0))]
    InvalidTenant(String),
    /// An illegal status transition.
    #[error(transparent)]
    Transition(#[from] TransitionError),
    /// Bad configuration (names the key).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A payload could not be serialized to JSON.
    #[error(transparent)]
    Serialize(#[from] SerializeError),
    /// A message (or a batch of them) that breaks an envelope rule: nothing was written.
    #[error(transparent)]
    Message(#[from] MessageError),
    /// A wiring mistake found when the runtime is built: nothing was started.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The broker transport failed (unreachable, or refused a subscription).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A command whose target service has no topic in `commands.topics`.
    #[error(transparent)]
    NoRoute(#[from] NoRoute),
    /// Messages arrived before this process's subscriptions were registered in the
    /// database: nothing was stored, the transport keeps them and delivers them again.
    #[error("this process's subscriptions are not registered yet")]
    NotRegistered,
    /// A saga used the wrong way (a reply outside a saga step, data that does not fit).
    #[error(transparent)]
    Saga(#[from] crate::saga::SagaError),
}

impl Error {
    /// What to do about this error, when bandeja knows: a sentence to show next to the
    /// error (a command line prints it on a second line). A configuration error gives its
    /// own [`ConfigError::hint`] (the keys expected where an unknown one was found). `None`
    /// for the errors whose message already says it all (an illegal status transition).
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::NoTenant => Some(
                "run this inside `bandeja::tenant::scope(tenant, ...)` so the command knows \
                 its source tenant"
                    .to_owned(),
            ),
            Error::InvalidTenant(_) => {
                Some("a tenant id is 1 to 128 bytes of text without control characters".to_owned())
            }
            Error::Serialize(e) => Some(e.hint().to_owned()),
            Error::Message(e) => Some(e.hint().to_owned()),
            Error::Build(e) => Some(e.hint().to_owned()),
            Error::Store(e) => e.hint().map(str::to_owned),
            Error::Transport(e) => e.hint().map(str::to_owned),
            Error::NoRoute(e) => Some(e.hint()),
            Error::NotRegistered => Some(
                "the database did not answer when the process started; the messages stay \
                 with the broker and come again"
                    .to_owned(),
            ),
            Error::Config(e) => e.hint().map(str::to_owned),
            Error::Transition(_) | Error::Saga(_) => None,
        }
    }
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
