//! The errors of the store port ([`StoreError`]) and of handlers ([`HandlerError`]), each
//! with a kind that lets a worker choose retry or FAILED without parsing text.

use std::error::Error as StdError;
use std::fmt;

use super::BoxError;

/// What kind of store failure happened: lets the caller choose retry or give up without
/// parsing text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

impl StoreErrorKind {
    /// What to do about a failure of this kind, when there is something general to say.
    #[must_use]
    pub const fn hint(self) -> Option<&'static str> {
        match self {
            StoreErrorKind::Transient => Some("the database is unreachable or busy: try again"),
            StoreErrorKind::Migration => {
                Some("the tables are missing or out of date: run the migrations")
            }
            StoreErrorKind::Duplicate | StoreErrorKind::Permanent => None,
        }
    }
}

impl fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreErrorKind::Transient => "transient",
            StoreErrorKind::Duplicate => "duplicate",
            StoreErrorKind::Permanent => "permanent",
            StoreErrorKind::Migration => "migration",
        })
    }
}

/// A store operation that failed, with its kind and the driver error as source.
#[derive(Debug, thiserror::Error)]
#[error("{operation} failed ({kind}): {source}")]
#[non_exhaustive]
pub struct StoreError {
    kind: StoreErrorKind,
    operation: &'static str,
    #[source]
    source: BoxError,
}

impl StoreError {
    /// Builds a store error: its kind, what the store was doing (`claim outbox_events`,
    /// `insert into outbox`...) and the underlying error.
    pub fn new(kind: StoreErrorKind, operation: &'static str, source: impl Into<BoxError>) -> Self {
        StoreError {
            kind,
            operation,
            source: source.into(),
        }
    }

    /// The kind of failure.
    #[must_use]
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// What the store was doing (`claim outbox_events`, `insert into outbox`...).
    #[must_use]
    pub fn operation(&self) -> &'static str {
        self.operation
    }

    /// The underlying error (the driver's, or a typed refusal such as
    /// [`ReplayRefused`](crate::admin::ReplayRefused)): `downcast_ref` finds its type.
    #[must_use]
    pub fn get_ref(&self) -> &(dyn StdError + Send + Sync + 'static) {
        self.source.as_ref()
    }

    /// The underlying error, owned.
    #[must_use]
    pub fn into_inner(self) -> BoxError {
        self.source
    }

    /// Whether trying again later may succeed.
    #[must_use]
    pub fn is_transient(&self) -> bool {
        self.kind == StoreErrorKind::Transient
    }

    /// What to do about it, when the kind says (see [`StoreErrorKind::hint`]).
    #[must_use]
    pub fn hint(&self) -> Option<&'static str> {
        self.kind.hint()
    }
}

/// Whether a handler's failure may succeed on a later attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// Retry with backoff until `max-retries`.
    Retriable,
    /// Go to FAILED at once, without spending retries.
    Permanent,
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FailureKind::Retriable => "retriable",
            FailureKind::Permanent => "permanent",
        })
    }
}

/// The error a handler returns. Any error converts into a retriable one with `?`; use
/// [`HandlerError::permanent`] for errors that retrying cannot fix.
///
/// It does not implement `std::error::Error` (that would clash with the conversion from
/// every error); [`get_ref`](HandlerError::get_ref) gives the error inside.
#[derive(Debug)]
#[non_exhaustive]
pub struct HandlerError {
    kind: FailureKind,
    source: BoxError,
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

    /// Retriable or permanent.
    #[must_use]
    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// What went wrong: `downcast_ref` finds its type.
    #[must_use]
    pub fn get_ref(&self) -> &(dyn StdError + Send + Sync + 'static) {
        self.source.as_ref()
    }

    /// What went wrong, owned.
    #[must_use]
    pub fn into_inner(self) -> BoxError {
        self.source
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
