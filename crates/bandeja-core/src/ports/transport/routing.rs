//! Where a message goes on a broker: its *address* (an event's type; a command's topic,
//! from `commands.topics` by target service) and its *partition* (a stable hash of the
//! partition key over the transport's partition count). Transports turn the two into
//! their own names (a JetStream subject, a RabbitMQ routing key) and keep every partition
//! in order: messages with one key take one partition, so they arrive in emission order.

use std::collections::BTreeMap;

use crate::error::MessageError;
use crate::record::{MessageKind, MessageRecord};

/// The routes of one service: its name and `commands.topics`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routing {
    service: String,
    topics: BTreeMap<String, String>,
}

pub use crate::error::NoRoute;

impl Routing {
    /// The routes of `service` with `topics` (target service → topic).
    pub fn new(service: impl Into<String>, topics: BTreeMap<String, String>) -> Self {
        Routing {
            service: service.into(),
            topics,
        }
    }

    /// This service's name.
    pub fn service(&self) -> &str {
        &self.service
    }

    /// The topic commands to `service` go to.
    pub fn topic_of(&self, service: &str) -> Result<&str, NoRoute> {
        self.topics
            .get(service)
            .map(String::as_str)
            .ok_or_else(|| NoRoute::new(service))
    }

    /// The topic this service consumes commands from.
    pub fn own_topic(&self) -> Result<&str, NoRoute> {
        self.topic_of(&self.service)
    }

    /// The address of a message: an event's type, or a command's topic.
    pub fn address<'a>(&'a self, record: &'a MessageRecord) -> Result<&'a str, NoRoute> {
        match record.kind {
            MessageKind::Event => Ok(&record.message_type),
            MessageKind::Command => self.topic_of(record.target_service.as_deref().unwrap_or("")),
        }
    }
}

/// What every emission path checks before a message enters an outbox (the outbox handle,
/// [`Bandeja::emit`](crate::Bandeja::emit), a handler's
/// [`emit`](crate::handler::HandlerContext::emit) and
/// [`send`](crate::handler::HandlerContext::send)): its payload is at most
/// `max_payload_bytes`; with a broker (`routing`) it has an address (a command's target
/// service has a topic); no store refuses its text (no NUL character); and its id is not
/// one already accepted for the same insert (`repeated`, which the caller knows from
/// what it holds).
pub(crate) fn check_outgoing(
    record: &MessageRecord,
    max_payload_bytes: usize,
    routing: Option<&Routing>,
    repeated: impl FnOnce(&MessageRecord) -> bool,
) -> crate::error::Result<()> {
    record.check_size(max_payload_bytes)?;
    if let Some(routing) = routing {
        routing.address(record)?;
    }
    record.check_storable()?;
    if repeated(record) {
        return Err(MessageError::repeated_id(record.id, &record.message_type).into());
    }
    Ok(())
}

/// The partition (of `partitions`) a message takes: FNV-1a of its partition key (of its id
/// when it has none), so every process and every version puts one key on one partition.
pub fn partition_of(record: &MessageRecord, partitions: u16) -> u16 {
    let partitions = u32::from(partitions.max(1));
    let hash = match &record.partition_key {
        Some(key) => fnv1a(key.as_bytes()),
        None => fnv1a(record.id.0.as_bytes()),
    };
    // The remainder is below `partitions`, itself a u16.
    u16::try_from(hash % partitions).unwrap_or(0)
}

fn fnv1a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// A name made safe for broker names (JetStream subjects and consumer names, RabbitMQ
/// queues): ASCII letters, digits, `-` and `_` kept, anything else `_`.
pub fn token(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Event;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct P;
    impl crate::Payload for P {
        const TYPE: &'static str = "t.P";
    }

    fn keyed(key: &str) -> MessageRecord {
        MessageRecord::from_event(&Event::new("A", key, P)).expect("record")
    }

    #[test]
    fn one_key_one_partition_and_keys_spread() {
        let a = partition_of(&keyed("order-1"), 8);
        assert_eq!(a, partition_of(&keyed("order-1"), 8));
        let used: std::collections::BTreeSet<u16> = (0..200)
            .map(|n| partition_of(&keyed(&format!("k{n}")), 8))
            .collect();
        assert_eq!(used.len(), 8);
        assert_eq!(partition_of(&keyed("x"), 0), 0);
        // Fixed forever: producers and consumers of different versions must agree.
        assert_eq!(fnv1a(b"order-1") % 8, 5);
    }

    #[test]
    fn commands_need_a_topic() {
        let routing = Routing::new(
            "order",
            BTreeMap::from([("billing".to_owned(), "billing.commands".to_owned())]),
        );
        let mut record = keyed("k");
        assert_eq!(routing.address(&record), Ok("t.P"));
        record.kind = MessageKind::Command;
        record.target_service = Some("billing".into());
        assert_eq!(routing.address(&record), Ok("billing.commands"));
        record.target_service = Some("stock".into());
        let error = routing.address(&record).expect_err("no route");
        assert_eq!(error.service(), "stock");
        assert!(error.to_string().contains("`stock`"), "{error}");
        assert!(
            error.hint().contains("[commands.topics] stock"),
            "{}",
            error.hint()
        );
        assert!(routing.own_topic().is_err());
        assert_eq!(token("a.b c*>"), "a_b_c__");
    }
}
