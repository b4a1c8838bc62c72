//! The names on the server: streams, subjects, durable consumers.
//!
//! ```text
//! stream    <PREFIX>_EVENTS     subjects <prefix>.events.>
//! stream    <PREFIX>_COMMANDS   subjects <prefix>.commands.>
//! subject   <prefix>.<events|commands>.p<N>.<token(address)>
//! consumer  <token(service)>_<events|commands>_p<N>_g<generation>
//!           filter <prefix>.<events|commands>.p<N>.>
//! ```
//!
//! A consumer's generation is added by [`crate::consumer`], which replaces a partition's
//! consumer when it rewinds it.

use bandeja_core::transport::routing::token;
use bandeja_core::MessageKind;

/// The names of one prefix (already validated as a subject token).
#[derive(Debug, Clone)]
pub(crate) struct Names {
    prefix: String,
}

impl Names {
    pub(crate) fn new(prefix: &str) -> Self {
        Names {
            prefix: token(prefix),
        }
    }

    fn segment(kind: MessageKind) -> &'static str {
        match kind {
            MessageKind::Event => "events",
            MessageKind::Command => "commands",
        }
    }

    /// The stream of a kind: `<PREFIX>_EVENTS` or `<PREFIX>_COMMANDS`.
    pub(crate) fn stream(&self, kind: MessageKind) -> String {
        format!("{}_{}", self.prefix, Self::segment(kind)).to_uppercase()
    }

    /// The subjects of a kind's stream: `<prefix>.<events|commands>.>`.
    pub(crate) fn stream_subjects(&self, kind: MessageKind) -> String {
        format!("{}.{}.>", self.prefix, Self::segment(kind))
    }

    /// The subjects of one partition, up to the address: `<prefix>.<kind>.p<N>.`.
    pub(crate) fn partition_prefix(&self, kind: MessageKind, partition: u16) -> String {
        format!("{}.{}.p{partition}.", self.prefix, Self::segment(kind))
    }

    /// The subject of a message.
    pub(crate) fn subject(&self, kind: MessageKind, partition: u16, address: &str) -> String {
        self.partition_prefix(kind, partition) + &token(address)
    }

    /// The filter of one partition's consumer: `<prefix>.<kind>.p<N>.>`.
    pub(crate) fn partition_filter(&self, kind: MessageKind, partition: u16) -> String {
        self.partition_prefix(kind, partition) + ">"
    }

    /// The base name of a service's durable consumers on one partition (each generation is
    /// named after it).
    pub(crate) fn consumer(service: &str, kind: MessageKind, partition: u16) -> String {
        format!("{}_{}_p{partition}", token(service), Self::segment(kind))
    }
}

/// The address token of a subject of the partition whose subjects start with `prefix`
/// (`None` for a subject of another shape, e.g. with more tokens).
pub(crate) fn address_token<'a>(subject: &'a str, prefix: &str) -> Option<&'a str> {
    subject
        .strip_prefix(prefix)
        .filter(|rest| !rest.is_empty() && !rest.contains('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_documented_shapes() {
        let names = Names::new("shop");
        assert_eq!(names.stream(MessageKind::Event), "SHOP_EVENTS");
        assert_eq!(names.stream(MessageKind::Command), "SHOP_COMMANDS");
        assert_eq!(names.stream_subjects(MessageKind::Event), "shop.events.>");
        assert_eq!(
            names.subject(MessageKind::Event, 3, "shop.OrderPlaced"),
            "shop.events.p3.shop_OrderPlaced"
        );
        assert_eq!(
            names.subject(MessageKind::Command, 0, "billing-commands"),
            "shop.commands.p0.billing-commands"
        );
        assert_eq!(
            names.partition_filter(MessageKind::Command, 7),
            "shop.commands.p7.>"
        );
        assert_eq!(
            Names::consumer("my.service", MessageKind::Event, 2),
            "my_service_events_p2"
        );
    }

    #[test]
    fn address_tokens_come_from_the_last_token_only() {
        let prefix = "shop.events.p1.";
        assert_eq!(address_token("shop.events.p1.a_B", prefix), Some("a_B"));
        assert_eq!(address_token("shop.events.p1.a.b", prefix), None);
        assert_eq!(address_token("shop.events.p1.", prefix), None);
        assert_eq!(address_token("shop.events.p2.a", prefix), None);
    }
}
