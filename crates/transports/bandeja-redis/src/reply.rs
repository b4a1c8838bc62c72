//! Reading the server's replies to the stream commands from the raw [`Value`]s, whatever
//! bytes the entries hold (the client's typed replies want field names that are text) and
//! in either protocol version's shapes (arrays in RESP2, maps in RESP3). A reply of
//! another shape is an error naming what was wrong, never a panic.

use redis::Value;

use crate::entry::{Entry, EntryId, Read};

/// What a malformed reply lacked.
pub(crate) type Malformed = String;

/// A text value (a bulk or simple string, a number) as text; anything else empty.
pub(crate) fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(text) => text.clone(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::Okay => "OK".to_owned(),
        Value::Int(n) => n.to_string(),
        _ => String::new(),
    }
}

/// A string value's bytes.
fn bytes(value: Value) -> Option<Vec<u8>> {
    match value {
        Value::BulkString(bytes) => Some(bytes),
        Value::SimpleString(text) => Some(text.into_bytes()),
        Value::VerbatimString { text, .. } => Some(text.into_bytes()),
        Value::Int(n) => Some(n.to_string().into_bytes()),
        _ => None,
    }
}

/// An array's items (a set's too).
fn items(value: Value, what: &str) -> Result<Vec<Value>, Malformed> {
    match value {
        Value::Array(items) | Value::Set(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        other => Err(format!("{what}: expected an array, got {other:?}")),
    }
}

/// An entry id.
fn entry_id(value: Value) -> Result<EntryId, Malformed> {
    let text = bytes(value).map(|b| String::from_utf8_lossy(&b).into_owned());
    text.as_deref()
        .and_then(EntryId::parse)
        .ok_or_else(|| format!("an entry id that is not `<ms>-<seq>`: {text:?}"))
}

/// Name/value pairs from a flat array (RESP2) or a map (RESP3).
fn pairs(value: Value, what: &str) -> Result<Vec<(Value, Value)>, Malformed> {
    match value {
        Value::Map(pairs) => Ok(pairs),
        other => {
            let flat = items(other, what)?;
            if flat.len() % 2 != 0 {
                return Err(format!("{what}: an odd number of names and values"));
            }
            let mut iter = flat.into_iter();
            let mut pairs = Vec::new();
            while let (Some(name), Some(value)) = (iter.next(), iter.next()) {
                pairs.push((name, value));
            }
            Ok(pairs)
        }
    }
}

/// A list of entries (`XRANGE`'s shape: `[[id, [field, value, …]], …]`); an entry whose
/// fields are nil was deleted while pending ([`Read::Gone`]).
pub(crate) fn entries(stream: &str, value: Value) -> Result<Vec<Read>, Malformed> {
    let mut read = Vec::new();
    for item in items(value, "entries")? {
        let mut parts = items(item, "an entry")?.into_iter();
        let id = entry_id(parts.next().unwrap_or(Value::Nil))?;
        match parts.next() {
            None | Some(Value::Nil) => read.push(Read::Gone(id)),
            Some(fields) => {
                let mut named = Vec::new();
                for (name, value) in pairs(fields, "an entry's fields")? {
                    named.push((
                        bytes(name).unwrap_or_default(),
                        bytes(value).unwrap_or_default(),
                    ));
                }
                read.push(Read::Entry(Entry::from_fields(stream, id, named)));
            }
        }
    }
    Ok(read)
}

/// The entries of `stream` in an `XREADGROUP` reply (nil when nothing came in time).
pub(crate) fn read_group(stream: &str, value: Value) -> Result<Vec<Read>, Malformed> {
    let streams = match value {
        Value::Nil => return Ok(Vec::new()),
        Value::Map(pairs) => pairs,
        other => {
            let mut pairs = Vec::new();
            for item in items(other, "XREADGROUP")? {
                let mut parts = items(item, "a stream of XREADGROUP")?.into_iter();
                pairs.push((
                    parts.next().unwrap_or(Value::Nil),
                    parts.next().unwrap_or(Value::Nil),
                ));
            }
            pairs
        }
    };
    for (key, entries_of) in streams {
        if bytes(key).as_deref() == Some(stream.as_bytes()) {
            return entries(stream, entries_of);
        }
    }
    Ok(Vec::new())
}

/// An `XAUTOCLAIM` reply: the cursor to go on from (`0-0` once the whole list was
/// scanned), the entries claimed, and the ids deleted from the stream that the server
/// dropped from the pending list (Redis 7).
pub(crate) struct Claimed {
    pub(crate) cursor: EntryId,
    pub(crate) entries: Vec<Read>,
    pub(crate) deleted: Vec<EntryId>,
}

/// Reads an `XAUTOCLAIM` reply.
pub(crate) fn autoclaim(stream: &str, value: Value) -> Result<Claimed, Malformed> {
    let mut parts = items(value, "XAUTOCLAIM")?.into_iter();
    let cursor = entry_id(parts.next().unwrap_or(Value::Nil))?;
    let entries = entries(stream, parts.next().unwrap_or(Value::Nil))?;
    let mut deleted = Vec::new();
    if let Some(ids) = parts.next() {
        for id in items(ids, "XAUTOCLAIM's deleted ids")? {
            deleted.push(entry_id(id)?);
        }
    }
    Ok(Claimed {
        cursor,
        entries,
        deleted,
    })
}

/// One pending entry of the extended `XPENDING` form: its id and its consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    pub(crate) id: EntryId,
    pub(crate) consumer: String,
}

/// Reads an extended `XPENDING` reply (`[[id, consumer, idle, deliveries], …]`).
pub(crate) fn pending(value: Value) -> Result<Vec<Pending>, Malformed> {
    let mut pending = Vec::new();
    for item in items(value, "XPENDING")? {
        let mut parts = items(item, "a pending entry")?.into_iter();
        let id = entry_id(parts.next().unwrap_or(Value::Nil))?;
        let consumer = text(&parts.next().unwrap_or(Value::Nil));
        pending.push(Pending { id, consumer });
    }
    Ok(pending)
}

/// One consumer of `XINFO CONSUMERS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Consumer {
    pub(crate) name: String,
    pub(crate) pending: i64,
    /// Milliseconds since its last attempted interaction.
    pub(crate) idle: i64,
}

/// Reads an `XINFO CONSUMERS` reply.
pub(crate) fn consumers(value: Value) -> Result<Vec<Consumer>, Malformed> {
    let mut consumers = Vec::new();
    for item in items(value, "XINFO CONSUMERS")? {
        let mut consumer = Consumer {
            name: String::new(),
            pending: 0,
            idle: 0,
        };
        for (name, value) in pairs(item, "a consumer")? {
            let number = || text(&value).parse().unwrap_or(0);
            match text(&name).as_str() {
                "name" => consumer.name = text(&value),
                "pending" => consumer.pending = number(),
                "idle" => consumer.idle = number(),
                _ => {}
            }
        }
        consumers.push(consumer);
    }
    Ok(consumers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    fn entry(id: &str, fields: &[(&str, &[u8])]) -> Value {
        let flat = fields
            .iter()
            .flat_map(|(name, value)| [bulk(name), Value::BulkString(value.to_vec())])
            .collect();
        Value::Array(vec![bulk(id), Value::Array(flat)])
    }

    fn id(text: &str) -> EntryId {
        EntryId::parse(text).expect("id")
    }

    #[test]
    fn xreadgroup_replies_of_both_protocols_give_the_entries() {
        let list = Value::Array(vec![
            entry("1-0", &[("address", b"t.P"), ("body", b"{}")]),
            Value::Array(vec![bulk("2-0"), Value::Nil]),
        ]);
        let resp2 = Value::Array(vec![Value::Array(vec![bulk("s"), list.clone()])]);
        let resp3 = Value::Map(vec![(bulk("s"), list)]);
        for reply in [resp2, resp3] {
            let read = read_group("s", reply).expect("parsed");
            assert_eq!(read.len(), 2);
            assert!(
                matches!(&read[0], Read::Entry(e) if e.body == b"{}" && e.address.as_deref() == Some("t.P"))
            );
            assert_eq!(read[1], Read::Gone(id("2-0")));
        }
        assert!(read_group("s", Value::Nil).expect("nil").is_empty());
        assert!(read_group("other", Value::Array(vec![]))
            .expect("none")
            .is_empty());
        assert!(read_group("s", Value::Int(3)).is_err());
    }

    #[test]
    fn autoclaim_pending_and_consumers_are_read() {
        let claimed = autoclaim(
            "s",
            Value::Array(vec![
                bulk("0-0"),
                Value::Array(vec![entry("5-1", &[("body", b"x")])]),
                Value::Array(vec![bulk("4-0")]),
            ]),
        )
        .expect("parsed");
        assert_eq!(claimed.cursor, EntryId::ZERO);
        assert_eq!(claimed.entries.len(), 1);
        assert_eq!(claimed.deleted, vec![id("4-0")]);
        let older = autoclaim("s", Value::Array(vec![bulk("7-0"), Value::Array(vec![])]))
            .expect("Redis 6.2 has no deleted list");
        assert_eq!((older.cursor, older.deleted.len()), (id("7-0"), 0));

        let listed = pending(Value::Array(vec![Value::Array(vec![
            bulk("3-0"),
            bulk("c1"),
            Value::Int(10),
            Value::Int(1),
        ])]))
        .expect("parsed");
        assert_eq!(
            listed,
            vec![Pending {
                id: id("3-0"),
                consumer: "c1".into()
            }]
        );
        assert!(pending(Value::Array(vec![Value::Array(vec![bulk("x")])])).is_err());

        let flat = Value::Array(vec![Value::Array(vec![
            bulk("name"),
            bulk("c1"),
            bulk("pending"),
            Value::Int(2),
            bulk("idle"),
            Value::Int(99),
        ])]);
        let map = Value::Array(vec![Value::Map(vec![
            (bulk("name"), bulk("c1")),
            (bulk("pending"), Value::Int(2)),
            (bulk("idle"), Value::Int(99)),
        ])]);
        for reply in [flat, map] {
            assert_eq!(
                consumers(reply).expect("parsed"),
                vec![Consumer {
                    name: "c1".into(),
                    pending: 2,
                    idle: 99
                }]
            );
        }
    }
}
