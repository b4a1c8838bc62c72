//! The name rules every tier shares: what makes a message type, subscriber or service name
//! usable, and the reserved names bandeja itself uses in the inbox.

/// The message type given to a body that could not be read as a message.
pub const MALFORMED_TYPE: &str = "bandeja.malformed";
/// The subscriber name of inbox rows stored for messages no local handler can take (a body
/// that is not a message, or a message type this service has no subscriber for). The
/// inbox worker marks them FAILED with the reason in [`REJECTED_HEADER`].
pub const REJECTED_SUBSCRIBER: &str = "bandeja.rejected";
/// The header of a rejected inbox row that holds why it was rejected.
pub const REJECTED_HEADER: &str = "bandeja-rejected";

/// Whether `name` is a usable message type name: non-empty, at most 255 bytes, no
/// whitespace or control characters. Where the name comes from decides the error:
/// [`BuildErrorKind::MessageType`](crate::error::BuildErrorKind::MessageType) for a
/// handler's type, [`MessageErrorKind::InvalidType`](crate::error::MessageErrorKind::InvalidType)
/// for a message's.
#[must_use]
pub fn is_usable_type_name(name: &str) -> bool {
    usable(name, 255)
}

/// Whether `name` is a usable subscriber or service name: 1 to 128 bytes, no whitespace or
/// control characters.
#[must_use]
pub fn is_usable_name(name: &str) -> bool {
    usable(name, 128)
}

fn usable(name: &str, most: usize) -> bool {
    !name.is_empty()
        && name.len() <= most
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}
