//! [`MessageError`]: a message, or a batch of them, that breaks an envelope rule.

use std::fmt;

use super::shown;
use crate::envelope::MessageId;

/// Which envelope rule a [`MessageError`] breaks. Each kind's
/// [`hint`](MessageErrorKind::hint) says what to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageErrorKind {
    /// The message type breaks the rule of type names (1 to 255 characters, no
    /// whitespace or control characters).
    InvalidType,
    /// An event without an aggregate id (created before its aggregate had one, never
    /// hydrated).
    MissingAggregateId,
    /// A command with an empty target service.
    MissingTargetService,
    /// A command whose target service breaks the rule of service names (1 to 128
    /// characters, no whitespace or control characters).
    InvalidTargetService,
    /// A payload larger than the limit (`BandejaBuilder::max_payload_bytes`, default 1 MiB).
    TooLarge,
    /// A NUL character in a text field, a header or the payload: PostgreSQL cannot store
    /// it, so no store takes it.
    NulCharacter,
    /// The same message id twice in one emission.
    RepeatedId,
}

/// What to do about a message type that is not a usable name (said at build and at
/// emission alike).
pub(crate) const PAYLOAD_TYPE_HINT: &str = "set `Payload::TYPE` to a stable name of 1 to 255 \
     characters without spaces or control characters, such as `shop.OrderPlaced`";

impl MessageErrorKind {
    /// What to do about a message of this kind.
    #[must_use]
    pub const fn hint(self) -> &'static str {
        match self {
            MessageErrorKind::InvalidType => PAYLOAD_TYPE_HINT,
            MessageErrorKind::MissingAggregateId => {
                "hydrate it after inserting the aggregate, before emitting"
            }
            MessageErrorKind::MissingTargetService => "name the service that must handle it",
            MessageErrorKind::InvalidTargetService => {
                "name the target service with 1 to 128 characters without spaces"
            }
            MessageErrorKind::TooLarge => {
                "store large data elsewhere and send a reference, or raise the limit with \
                 `BandejaBuilder::max_payload_bytes` (default 1048576 bytes)"
            }
            MessageErrorKind::NulCharacter => {
                "PostgreSQL cannot store a NUL character: remove it, or encode binary data \
                 (base64, say)"
            }
            MessageErrorKind::RepeatedId => {
                "give every message a fresh id (`MessageId::new()`, as `Event::new` does)"
            }
        }
    }
}

impl fmt::Display for MessageErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MessageErrorKind::InvalidType => "invalid message type",
            MessageErrorKind::MissingAggregateId => "missing aggregate id",
            MessageErrorKind::MissingTargetService => "missing target service",
            MessageErrorKind::InvalidTargetService => "invalid target service",
            MessageErrorKind::TooLarge => "payload too large",
            MessageErrorKind::NulCharacter => "NUL character in text",
            MessageErrorKind::RepeatedId => "repeated message id",
        })
    }
}

/// A message (or a batch of them) that breaks an envelope rule: nothing was written.
/// Match on [`kind`](MessageError::kind); [`id`](MessageError::id) and
/// [`message_type`](MessageError::message_type) say which message;
/// [`hint`](MessageError::hint) says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
#[non_exhaustive]
pub struct MessageError {
    kind: MessageErrorKind,
    id: MessageId,
    message_type: String,
    text: String,
}

impl MessageError {
    fn new(kind: MessageErrorKind, id: MessageId, message_type: &str, text: String) -> Self {
        MessageError {
            kind,
            id,
            message_type: message_type.to_owned(),
            text,
        }
    }

    /// A message type that breaks the rule of type names.
    pub(crate) fn invalid_type(id: MessageId, message_type: &str) -> Self {
        let text = format!("message type `{}` is not usable", shown(message_type));
        Self::new(MessageErrorKind::InvalidType, id, message_type, text)
    }

    /// An event without an aggregate id.
    pub(crate) fn missing_aggregate_id(id: MessageId, message_type: &str) -> Self {
        let text = format!("event `{}` ({id}) has no aggregate id", shown(message_type));
        Self::new(MessageErrorKind::MissingAggregateId, id, message_type, text)
    }

    /// A command with an empty target service.
    pub(crate) fn missing_target_service(id: MessageId, message_type: &str) -> Self {
        let text = format!(
            "command `{}` has an empty target service",
            shown(message_type)
        );
        Self::new(
            MessageErrorKind::MissingTargetService,
            id,
            message_type,
            text,
        )
    }

    /// A command whose target service breaks the rule of service names.
    pub(crate) fn invalid_target_service(id: MessageId, message_type: &str, target: &str) -> Self {
        let text = format!(
            "target service name `{}` of command `{}` is not usable",
            shown(target),
            shown(message_type)
        );
        Self::new(
            MessageErrorKind::InvalidTargetService,
            id,
            message_type,
            text,
        )
    }

    /// A payload of `size` bytes, over the limit of `limit`.
    pub(crate) fn too_large(id: MessageId, message_type: &str, size: usize, limit: usize) -> Self {
        let text = format!(
            "payload of `{}` is {size} bytes, over the limit of {limit}",
            shown(message_type)
        );
        Self::new(MessageErrorKind::TooLarge, id, message_type, text)
    }

    /// A NUL character in `what` (`the aggregate id`, `the payload`, ...).
    pub(crate) fn nul_character(id: MessageId, message_type: &str, what: &str) -> Self {
        let text = format!(
            "{what} of `{}` ({id}) contains a NUL character",
            shown(message_type)
        );
        Self::new(MessageErrorKind::NulCharacter, id, message_type, text)
    }

    /// A message id that appears twice in one emission.
    pub(crate) fn repeated_id(id: MessageId, message_type: &str) -> Self {
        let text = format!("message id {id} appears twice in one emission");
        Self::new(MessageErrorKind::RepeatedId, id, message_type, text)
    }

    /// Which rule the message breaks.
    #[must_use]
    pub fn kind(&self) -> MessageErrorKind {
        self.kind
    }

    /// The id of the message (for [`RepeatedId`](MessageErrorKind::RepeatedId), the
    /// repeated id).
    #[must_use]
    pub fn id(&self) -> MessageId {
        self.id
    }

    /// The type of the message, as it was given (it may be the unusable name).
    #[must_use]
    pub fn message_type(&self) -> &str {
        &self.message_type
    }

    /// What to do about it (the [`kind`](Self::kind)'s hint).
    #[must_use]
    pub fn hint(&self) -> &'static str {
        self.kind.hint()
    }
}
