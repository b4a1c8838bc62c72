//! The core error type and the error kinds that let a worker decide retry or FAILED.

use std::error::Error as StdError;

use crate::config::ConfigError;
use crate::status::TransitionError;

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

/// What kind of store failure happened: lets the caller choose retry or give up without
/// parsing text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The database is unreachable, busy or timed out: try again later.
    Transient,
    /// A unique key already exists (duplicate message id).
    Duplicate,
    /// A row could not be decoded or a statement is wrong: retrying will not help.
    Permanent,
    /// The migrations have not been run or failed.
    Migration,
}

/// A store operation that failed, with its kind and the driver error as source.
#[derive(Debug, thiserror::Error)]
#[error("{operation} failed ({kind:?}): {source}")]
pub struct StoreError {
    /// The kind of failure.
    pub kind: StoreErrorKind,
    /// What the store was doing (`claim outbox_events`, `insert into outbox`...).
    pub operation: &'static str,
    /// The underlying error.
    #[source]
    pub source: BoxError,
}

impl StoreError {
    /// Builds a store error.
    pub fn new(kind: StoreErrorKind, operation: &'static str, source: impl Into<BoxError>) -> Self {
        StoreError {
            kind,
            operation,
            source: source.into(),
        }
    }

    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        self.kind == StoreErrorKind::Transient
    }
}

/// Whether a handler's failure may succeed on a later attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Retry with backoff until `max-retries`.
    Retriable,
    /// Go to FAILED at once, without spending retries.
    Permanent,
}

/// The error a handler returns. Any error converts into a retriable one with `?`; use
/// [`HandlerError::permanent`] for errors that retrying cannot fix.
#[derive(Debug)]
pub struct HandlerError {
    /// Retriable or permanent.
    pub kind: FailureKind,
    /// What went wrong.
    pub source: BoxError,
}

impl HandlerError {
    /// A failure that may succeed later (the default for `?`).
    pub fn retriable(source: impl Into<BoxError>) -> Self {
        HandlerError {
            kind: FailureKind::Retriable,
            source: source.into(),
        }
    }

    /// A failure that retrying cannot fix: the message goes to FAILED at once.
    pub fn permanent(source: impl Into<BoxError>) -> Self {
        HandlerError {
            kind: FailureKind::Permanent,
            source: source.into(),
        }
    }
}

impl std::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.source)?;
        let mut next = self.source.source();
        while let Some(cause) = next {
            write!(f, ": {cause}")?;
            next = cause.source();
        }
        Ok(())
    }
}

impl<E: Into<BoxError>> From<E> for HandlerError {
    fn from(source: E) -> Self {
        HandlerError::retriable(source)
    }
}

/// Why a publish did not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The broker is unreachable or did not acknowledge in time: retry later without
    /// spending the message's retries.
    Unavailable,
    /// The broker refused this message (too large, no route...): counts as a failed attempt.
    Rejected,
}

/// A publish or subscription failure.
#[derive(Debug, thiserror::Error)]
#[error("transport {kind:?}: {source}")]
pub struct TransportError {
    /// The kind, so the worker decides without parsing text.
    pub kind: TransportErrorKind,
    /// The broker client's error.
    #[source]
    pub source: BoxError,
}

/// A command whose target service has no topic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no route for commands to service `{service}`: add `[commands.topics] {service} = \"<topic>\"` (or BANDEJA_COMMANDS_TOPICS) to the configuration of the sending service")]
pub struct NoRoute {
    /// The target service.
    pub service: String,
}
