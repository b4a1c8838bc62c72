//! The names this transport gives things on the broker.
//!
//! - exchanges: `<prefix>.events` and `<prefix>.commands` (direct, durable);
//! - routing keys: `p<N>.<address>` (partition, then the event type or command topic);
//! - queues: `<prefix>.<service>.<events|commands>.p<N>`, one per partition of a consuming
//!   service, bound with `p<N>.<address>` for each address it consumes;
//! - `<prefix>.partitions`: a durable queue bound to nothing, whose `x-max-length` records
//!   the partition count of the services of the prefix (see `Settings::check_partitions`).

use bandeja_core::record::MessageKind;
use bandeja_core::transport::routing;
use lapin::types::ShortString;

use crate::error::AmqpError;

/// The plural used in names (`events`, `commands`).
pub(crate) fn plural(kind: MessageKind) -> &'static str {
    match kind {
        MessageKind::Event => "events",
        MessageKind::Command => "commands",
    }
}

/// The exchange messages of `kind` are published to.
pub(crate) fn exchange(prefix: &str, kind: MessageKind) -> String {
    format!("{prefix}.{}", plural(kind))
}

/// The routing key of a message on partition `partition` with `address`.
pub(crate) fn routing_key(partition: u16, address: &str) -> Result<ShortString, AmqpError> {
    short("routing key", format!("p{partition}.{address}"))
}

/// The queue of one partition of a consuming service.
pub(crate) fn queue(
    prefix: &str,
    service: &str,
    kind: MessageKind,
    partition: u16,
) -> Result<ShortString, AmqpError> {
    short(
        "queue name",
        format!(
            "{prefix}.{}.{}.p{partition}",
            routing::token(service),
            plural(kind)
        ),
    )
}

/// The queue recording the partition count of a prefix.
pub(crate) fn partitions_marker(prefix: &str) -> Result<ShortString, AmqpError> {
    short("queue name", format!("{prefix}.partitions"))
}

/// `name` as an AMQP short string (at most 255 bytes).
pub(crate) fn short(what: &'static str, name: String) -> Result<ShortString, AmqpError> {
    if name.len() > lapin::types::MAX_SHORT_STRING_LENGTH {
        return Err(AmqpError::too_long(what, &name));
    }
    ShortString::try_new(name).map_err(|e| AmqpError::InvalidOptions(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_documented_shapes() {
        assert_eq!(exchange("b", MessageKind::Event), "b.events");
        assert_eq!(exchange("b", MessageKind::Command), "b.commands");
        assert_eq!(
            routing_key(3, "shop.OrderPlaced").expect("key").as_str(),
            "p3.shop.OrderPlaced"
        );
        assert_eq!(
            queue("b", "in ventory", MessageKind::Command, 0)
                .expect("queue")
                .as_str(),
            "b.in_ventory.commands.p0"
        );
    }

    #[test]
    fn names_longer_than_255_bytes_are_refused() {
        let long = "a".repeat(252);
        let error = routing_key(12, &long).expect_err("too long");
        assert!(
            matches!(error, AmqpError::NameTooLong { len: 256, .. }),
            "{error}"
        );
        assert!(routing_key(1, &long).is_ok(), "255 bytes fit");
        assert!(queue("b", &long, MessageKind::Event, 0).is_err());
    }
}
