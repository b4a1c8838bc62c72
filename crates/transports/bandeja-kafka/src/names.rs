//! The names this transport gives things on the brokers.
//!
//! ```text
//! topic           <prefix>.events                 every event, all types (so one key's
//!                                                 events keep their order across types)
//! topic           <prefix>.commands.<topic>       the commands of one topic
//! consumer group  <prefix>.<service>.events       a service's events consumers
//! consumer group  <prefix>.<service>.commands     a service's commands consumers
//! ```
//!
//! The partition of a message is bandeja's (FNV-1a of its partition key, modulo the
//! partition count), the same as on every broker; the record's key is the partition key
//! (the message id when there is none), for Kafka's tools.

use bandeja_core::record::MessageKind;
use bandeja_core::transport::routing::token;

/// The header holding the message id.
pub const MESSAGE_ID_HEADER: &str = "bandeja-message-id";
/// The header holding the message type.
pub const TYPE_HEADER: &str = "bandeja-type";
/// The header holding the body's content type (`application/cloudevents+json`).
pub const CONTENT_TYPE_HEADER: &str = "content-type";
/// The header holding the correlation id, when the message has one.
pub const CORRELATION_HEADER: &str = "bandeja-correlation-id";
/// The header holding the causation id, when the message has one.
pub const CAUSATION_HEADER: &str = "bandeja-causation-id";
/// The header holding the W3C trace context, when the message has one.
pub const TRACEPARENT_HEADER: &str = "traceparent";
/// The header naming the emitting service, when known.
pub const SOURCE_SERVICE_HEADER: &str = "bandeja-source-service";

/// The topics of one prefix (validated by the options).
#[derive(Debug, Clone)]
pub(crate) struct Names {
    prefix: String,
}

impl Names {
    pub(crate) fn new(prefix: &str) -> Self {
        Names {
            prefix: prefix.to_owned(),
        }
    }

    /// The topic a message of `kind` with `address` (an event's type, a command's topic)
    /// goes to.
    pub(crate) fn topic(&self, kind: MessageKind, address: &str) -> String {
        match kind {
            MessageKind::Event => format!("{}.events", self.prefix),
            MessageKind::Command => format!("{}.commands.{}", self.prefix, token(address)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_share_a_topic_and_commands_have_one_per_topic() {
        let names = Names::new("shop");
        assert_eq!(
            names.topic(MessageKind::Event, "shop.OrderPlaced"),
            "shop.events"
        );
        assert_eq!(names.topic(MessageKind::Event, "other.Type"), "shop.events");
        assert_eq!(
            names.topic(MessageKind::Command, "billing commands"),
            "shop.commands.billing_commands"
        );
    }
}
