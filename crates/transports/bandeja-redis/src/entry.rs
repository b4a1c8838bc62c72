//! One stream entry as this transport writes and reads it: its id (the order of the
//! stream), its address (what a consumer filters on) and its body (the wire format). The
//! field names are public so that other tools can read and write the streams.
//!
//! An entry written by another client may lack fields or hold bytes that are not text:
//! it is still read (the body of one without a `body` field is a description of it, which
//! the inbox stores FAILED as not JSON), never a reason for the consumer to stop.

use std::cmp::Ordering;
use std::fmt;

/// The field holding the message id (the inbox deduplicates by it).
pub const ID_FIELD: &str = "id";
/// The field holding the address: an event's type, a command's topic.
pub const ADDRESS_FIELD: &str = "address";
/// The field holding the message type.
pub const TYPE_FIELD: &str = "type";
/// The field holding the correlation id, when the message has one.
pub const CORRELATION_FIELD: &str = "correlation_id";
/// The field holding the W3C trace context, when the message has one.
pub const TRACEPARENT_FIELD: &str = "traceparent";
/// The field naming the emitting service, when known.
pub const SOURCE_SERVICE_FIELD: &str = "source_service";
/// The field holding the body: the message in bandeja's wire format.
pub const BODY_FIELD: &str = "body";

/// A stream entry id, `<milliseconds>-<sequence>`, ordered as the stream orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct EntryId {
    millis: u64,
    sequence: u64,
}

impl EntryId {
    /// The id before every entry (`0-0`).
    pub(crate) const ZERO: EntryId = EntryId {
        millis: 0,
        sequence: 0,
    };

    /// Parses `<ms>-<seq>`.
    pub(crate) fn parse(text: &str) -> Option<EntryId> {
        let (millis, sequence) = text.split_once('-')?;
        Some(EntryId {
            millis: millis.parse().ok()?,
            sequence: sequence.parse().ok()?,
        })
    }
}

impl Ord for EntryId {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.millis, self.sequence).cmp(&(other.millis, other.sequence))
    }
}

impl PartialOrd for EntryId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.millis, self.sequence)
    }
}

/// An entry read from a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: EntryId,
    /// The `address` field, when it is there and is text.
    pub(crate) address: Option<String>,
    /// The `body` field, or a description of an entry without one.
    pub(crate) body: Vec<u8>,
}

impl Entry {
    /// The entry `id` of `stream` with these fields (name, value), in their order.
    pub(crate) fn from_fields(stream: &str, id: EntryId, fields: Vec<(Vec<u8>, Vec<u8>)>) -> Entry {
        let mut address = None;
        let mut body = None;
        let mut names = Vec::with_capacity(fields.len());
        for (name, value) in fields {
            match name.as_slice() {
                b"address" => address = String::from_utf8(value).ok(),
                b"body" => body = Some(value),
                _ => names.push(String::from_utf8_lossy(&name).into_owned()),
            }
        }
        let body = body.unwrap_or_else(|| {
            format!(
                "a Redis stream entry without a `{BODY_FIELD}` field (stream `{stream}`, entry \
                 {id}, fields: {}): only bandeja messages belong on this stream",
                names.join(", ")
            )
            .into_bytes()
        });
        Entry { id, address, body }
    }
}

/// What reading an entry id gave: the entry, or nothing because it was deleted (trimmed)
/// while it was pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Read {
    Entry(Entry),
    Gone(EntryId),
}

impl Read {
    pub(crate) fn id(&self) -> EntryId {
        match self {
            Read::Entry(entry) => entry.id,
            Read::Gone(id) => *id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_order_as_numbers_not_as_text() {
        let a = EntryId::parse("9-1").expect("id");
        let b = EntryId::parse("10-0").expect("id");
        let c = EntryId::parse("10-2").expect("id");
        assert!(a < b && b < c);
        assert_eq!(c.to_string(), "10-2");
        assert!(EntryId::ZERO < a);
        for bad in ["", "1", "a-1", "1-", "-1", "1-2-3"] {
            assert_eq!(EntryId::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn an_entry_without_a_body_is_described_and_bytes_are_kept() {
        let id = EntryId::parse("1-1").expect("id");
        let entry = Entry::from_fields(
            "s",
            id,
            vec![
                (b"address".to_vec(), b"t.P".to_vec()),
                (b"body".to_vec(), vec![0xff, 0]),
            ],
        );
        assert_eq!(entry.address.as_deref(), Some("t.P"));
        assert_eq!(entry.body, vec![0xff, 0]);
        let other = Entry::from_fields("s", id, vec![(b"x".to_vec(), b"1".to_vec())]);
        assert_eq!(other.address, None);
        let text = String::from_utf8(other.body).expect("text");
        assert!(text.contains("without a `body` field") && text.contains("fields: x"));
        let binary = Entry::from_fields("s", id, vec![(b"address".to_vec(), vec![0xff])]);
        assert_eq!(binary.address, None, "an address that is not text");
    }
}
