//! The name rules every tier shares: what makes a message type, subscriber or service name
//! usable, and the reserved names bandeja itself uses in the inbox.

use crate::error::{Error, Result};

/// The message type given to a body that could not be read as a message.
pub const MALFORMED_TYPE: &str = "bandeja.malformed";
/// The subscriber name of inbox rows stored for messages no local handler can take (a body
/// that is not a message, or a message type this service has no subscriber for). The
/// inbox worker marks them FAILED with the reason in [`REJECTED_HEADER`].
pub const REJECTED_SUBSCRIBER: &str = "bandeja.rejected";
/// The header of a rejected inbox row that holds why it was rejected.
pub const REJECTED_HEADER: &str = "bandeja-rejected";

/// Checks a message type name: non-empty, at most 255 bytes, no whitespace or control characters.
pub fn validate_type_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 255
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(Error::InvalidMessage(format!(
            "message type `{}` is not usable: set `Payload::TYPE` to a stable name of 1 to 255 \
             characters without spaces or control characters, such as `shop.OrderPlaced`",
            name.escape_debug()
        )));
    }
    Ok(())
}

/// Checks a subscriber or service name (`what` says which, for the message): 1 to 128
/// characters, no whitespace or control characters.
pub fn validate_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 128
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(Error::InvalidMessage(format!(
            "{what} name `{name}` is not usable: use 1 to 128 characters without spaces"
        )));
    }
    Ok(())
}
