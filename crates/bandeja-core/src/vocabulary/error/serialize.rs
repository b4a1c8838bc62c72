//! A payload that cannot be written as JSON.

use super::shown;

/// A payload could not be serialized to JSON: names the message type; the serde error is
/// the [source](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[error("cannot serialize the payload of `{}` to JSON", shown(.message_type))]
#[non_exhaustive]
pub struct SerializeError {
    message_type: String,
    #[source]
    source: serde_json::Error,
}

impl SerializeError {
    /// The payload of `message_type` could not be serialized (`source` says why).
    #[must_use]
    pub fn new(message_type: impl Into<String>, source: serde_json::Error) -> Self {
        SerializeError {
            message_type: message_type.into(),
            source,
        }
    }

    /// The message type whose payload could not be serialized.
    #[must_use]
    pub fn message_type(&self) -> &str {
        &self.message_type
    }

    /// What to do.
    #[must_use]
    pub fn hint(&self) -> &'static str {
        "make the payload serializable as JSON (a map needs string keys)"
    }
}
