//! The names this transport gives things on the server.
//!
//! ```text
//! stream          <prefix>.events.p<N>              every event of partition N
//! stream          <prefix>.commands.<topic>.p<N>    the commands of one topic, partition N
//! consumer group  <service>                         on each stream the service consumes
//! consumer        <service>.<pid>.<random>          one per subscription of a process
//! key             <prefix>.partitions               the partition count of the prefix
//! ```
//!
//! Events of every type share their partition's stream, so one key's events stay in order
//! whatever their types; a command topic (usually one per consuming service) has streams
//! of its own, so a service reads only its commands.

use bandeja_core::record::MessageKind;
use bandeja_core::transport::routing::token;

/// The plural used in names (`events`, `commands`).
pub(crate) fn plural(kind: MessageKind) -> &'static str {
    match kind {
        MessageKind::Event => "events",
        MessageKind::Command => "commands",
    }
}

/// The names of one prefix (validated by the options).
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

    /// The stream a message of `kind` with `address` (an event's type, a command's topic)
    /// on `partition` goes to.
    pub(crate) fn stream(&self, kind: MessageKind, address: &str, partition: u16) -> String {
        match kind {
            MessageKind::Event => format!("{}.events.p{partition}", self.prefix),
            MessageKind::Command => format!("{}.commands.{address}.p{partition}", self.prefix),
        }
    }

    /// The key recording the partition count of the prefix.
    pub(crate) fn partitions_marker(&self) -> String {
        format!("{}.partitions", self.prefix)
    }
}

/// A consumer name no other process (or other subscription of this one) uses:
/// `<service>.<pid>.<random>`, readable in `XINFO CONSUMERS`.
pub(crate) fn consumer(service: &str) -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "{}.{}.{}",
        token(service),
        std::process::id(),
        &random[..12]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_documented_shapes() {
        let names = Names::new("shop");
        assert_eq!(
            names.stream(MessageKind::Event, "shop.OrderPlaced", 3),
            "shop.events.p3"
        );
        assert_eq!(
            names.stream(MessageKind::Command, "billing-commands", 0),
            "shop.commands.billing-commands.p0"
        );
        assert_eq!(names.partitions_marker(), "shop.partitions");
        let (a, b) = (consumer("in ventory"), consumer("in ventory"));
        assert!(a.starts_with(&format!("in_ventory.{}.", std::process::id())));
        assert_ne!(a, b, "every subscription is its own consumer");
    }
}
