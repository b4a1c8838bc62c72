//! The errors of the transport port: [`TransportError`] (a publish or a subscription that
//! failed) and [`NoRoute`] (a command with nowhere to go). Re-exported by
//! [`transport`](crate::transport) and [`transport::routing`](crate::transport::routing).

use std::error::Error as StdError;
use std::fmt;

use super::{shown, BoxError};

/// Why a publish did not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The broker is unreachable or did not acknowledge in time: retry later without
    /// spending the message's retries.
    Unavailable,
    /// The broker refused this message (too large, no route...): counts as a failed attempt.
    Rejected,
}

impl TransportErrorKind {
    /// What to do about a failure of this kind, when there is something general to say.
    #[must_use]
    pub const fn hint(self) -> Option<&'static str> {
        match self {
            TransportErrorKind::Unavailable => Some(
                "check that the broker is up and reachable: messages are published again later",
            ),
            TransportErrorKind::Rejected => None,
        }
    }
}

impl fmt::Display for TransportErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportErrorKind::Unavailable => "broker unavailable",
            TransportErrorKind::Rejected => "refused by the broker",
        })
    }
}

/// A publish or subscription failure: its kind, so the worker decides without parsing
/// text, and the broker client's error as source.
#[derive(Debug, thiserror::Error)]
#[error("{kind}: {source}")]
#[non_exhaustive]
pub struct TransportError {
    kind: TransportErrorKind,
    #[source]
    source: BoxError,
}

impl TransportError {
    /// A transport error of `kind` caused by `source`.
    pub fn new(kind: TransportErrorKind, source: impl Into<BoxError>) -> Self {
        TransportError {
            kind,
            source: source.into(),
        }
    }

    /// An unavailable broker (retried later without spending retries).
    pub fn unavailable(source: impl Into<BoxError>) -> Self {
        TransportError::new(TransportErrorKind::Unavailable, source)
    }

    /// A message the broker refused (counts as a failed attempt).
    pub fn rejected(source: impl Into<BoxError>) -> Self {
        TransportError::new(TransportErrorKind::Rejected, source)
    }

    /// The kind of failure.
    #[must_use]
    pub fn kind(&self) -> TransportErrorKind {
        self.kind
    }

    /// The broker client's error: `downcast_ref` finds its type.
    #[must_use]
    pub fn get_ref(&self) -> &(dyn StdError + Send + Sync + 'static) {
        self.source.as_ref()
    }

    /// The broker client's error, owned.
    #[must_use]
    pub fn into_inner(self) -> BoxError {
        self.source
    }

    /// What to do about it, when the kind says (see [`TransportErrorKind::hint`]).
    #[must_use]
    pub fn hint(&self) -> Option<&'static str> {
        self.kind.hint()
    }
}

/// A command whose target service has no topic in `commands.topics`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no route for commands to service `{}`", shown(.service))]
#[non_exhaustive]
pub struct NoRoute {
    service: String,
}

impl NoRoute {
    /// No route for commands to `service`.
    pub fn new(service: impl Into<String>) -> Self {
        NoRoute {
            service: service.into(),
        }
    }

    /// The target service.
    #[must_use]
    pub fn service(&self) -> &str {
        &self.service
    }

    /// What to do: the configuration key to add, naming the service.
    #[must_use]
    pub fn hint(&self) -> String {
        format!(
            "add `[commands.topics] {} = \"<topic>\"` (or BANDEJA_COMMANDS_TOPICS) to the \
             configuration of the sending service",
            self.service
        )
    }
}
