//! The tree every source is laid on before serde reads it once: TOML values, text from
//! environment variables, and tables of both. A serde `Deserializer` with an error of
//! its own, so that an unknown key stays an unknown key (with the keys serde expected
//! there) and every other error is the bare reason a value was refused.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, IntoDeserializer, Unexpected, Visitor};
use toml::Value;

use super::worker::parse_bool;

/// A value of the tree.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    /// A TOML value, never a table.
    Value(Value),
    /// The text of an environment variable (or of one entry of a table written in one),
    /// read as whatever the key asks for: `10` as an integer, `yes` as `true`.
    Text(String),
    /// A table.
    Table(BTreeMap<String, Node>),
}

impl From<Value> for Node {
    fn from(value: Value) -> Self {
        match value {
            Value::Table(table) => {
                Node::Table(table.into_iter().map(|(k, v)| (k, Node::from(v))).collect())
            }
            other => Node::Value(other),
        }
    }
}

impl Node {
    /// An empty table.
    pub(super) fn table() -> Node {
        Node::Table(BTreeMap::new())
    }

    /// Lays `node` at `path`, making tables on the way (a value on the way becomes a
    /// table). A table is merged into the table there, entry by entry, unless `whole`.
    pub(super) fn set<S: AsRef<str>>(&mut self, path: &[S], node: Node, whole: bool) {
        let Some((first, rest)) = path.split_first() else {
            match (self, node) {
                (Node::Table(here), Node::Table(entries)) if !whole => {
                    for (name, entry) in entries {
                        here.entry(name)
                            .or_insert_with(Node::table)
                            .set::<&str>(&[], entry, false);
                    }
                }
                (here, node) => *here = node,
            }
            return;
        };
        if !matches!(self, Node::Table(_)) {
            *self = Node::table();
        }
        if let Node::Table(here) = self {
            here.entry(first.as_ref().to_owned())
                .or_insert_with(Node::table)
                .set(rest, node, whole);
        }
    }

    /// The node at `path`, if any.
    pub(super) fn get<S: AsRef<str>>(&self, path: &[S]) -> Option<&Node> {
        path.iter().try_fold(self, |node, name| match node {
            Node::Table(table) => table.get(name.as_ref()),
            _ => None,
        })
    }
}

/// Why the tree could not be read at some key.
#[derive(Debug)]
pub(super) enum ReadError {
    /// The key is not one serde expected there; `expected` are the names it takes.
    Unknown {
        /// The field names (with their aliases) of the struct at that place.
        expected: &'static [&'static str],
    },
    /// The value was refused; the text says why and what is expected.
    Invalid(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Unknown { .. } => f.write_str("unknown key"),
            ReadError::Invalid(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for ReadError {}

impl de::Error for ReadError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ReadError::Invalid(msg.to_string())
    }

    fn invalid_type(_: Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        ReadError::Invalid(format!("expected {expected}"))
    }

    fn invalid_value(_: Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        ReadError::Invalid(format!("expected {expected}"))
    }

    fn unknown_field(_: &str, expected: &'static [&'static str]) -> Self {
        ReadError::Unknown { expected }
    }
}

impl<'de> IntoDeserializer<'de, ReadError> for Node {
    type Deserializer = Node;

    fn into_deserializer(self) -> Node {
        self
    }
}

impl Node {
    /// Text read as an integer when it is one.
    fn integer<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        if let Node::Text(text) = &self {
            if let Ok(n) = text.trim().parse::<i64>() {
                return visitor.visit_i64(n);
            }
            if let Ok(n) = text.trim().parse::<u64>() {
                return visitor.visit_u64(n);
            }
        }
        de::Deserializer::deserialize_any(self, visitor)
    }
}

macro_rules! integers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
            self.integer(visitor)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Node {
    type Error = ReadError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        match self {
            Node::Text(text) | Node::Value(Value::String(text)) => visitor.visit_string(text),
            Node::Table(table) => visitor.visit_map(MapDeserializer::new(table.into_iter())),
            Node::Value(Value::Integer(n)) => visitor.visit_i64(n),
            Node::Value(Value::Float(n)) => visitor.visit_f64(n),
            Node::Value(Value::Boolean(b)) => visitor.visit_bool(b),
            Node::Value(Value::Array(items)) => {
                visitor.visit_seq(SeqDeserializer::new(items.into_iter().map(Node::from)))
            }
            Node::Value(Value::Datetime(_)) => Err(de::Error::invalid_type(
                Unexpected::Other("a date-time"),
                &visitor,
            )),
            Node::Value(table @ Value::Table(_)) => Node::from(table).deserialize_any(visitor),
        }
    }

    /// `true` or `false` (as text also `yes`/`no`, `on`/`off`, `1`/`0`).
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        let boolean = match &self {
            Node::Value(Value::Boolean(b)) => Some(*b),
            Node::Text(text) => parse_bool(text),
            _ => None,
        };
        match boolean {
            Some(b) => visitor.visit_bool(b),
            None => Err(ReadError::Invalid("expected `true` or `false`".to_owned())),
        }
    }

    integers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
    }

    /// A number; an integer is taken as one.
    #[allow(clippy::cast_precision_loss)]
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        let number = match &self {
            Node::Value(Value::Float(n)) => Some(*n),
            Node::Value(Value::Integer(n)) => Some(*n as f64),
            Node::Text(text) => text.trim().parse().ok(),
            _ => None,
        };
        match number {
            Some(n) => visitor.visit_f64(n),
            None => Err(ReadError::Invalid("expected a number".to_owned())),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        match self {
            Node::Table(_) => self.deserialize_any(visitor),
            _ => Err(ReadError::Invalid("expected a table".to_owned())),
        }
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char str string bytes byte_buf unit unit_struct seq tuple tuple_struct
        map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Node {
        Node::Text(s.to_owned())
    }

    #[test]
    fn set_merges_tables_and_replaces_values() {
        let mut tree = Node::table();
        tree.set(&["a", "b"], text("1"), true);
        tree.set(&["a", "c"], text("2"), true);
        let entries = Node::Table(BTreeMap::from([("d".to_owned(), text("3"))]));
        tree.set(&["a"], entries.clone(), false);
        assert_eq!(tree.get(&["a", "b"]), Some(&text("1")));
        assert_eq!(tree.get(&["a", "d"]), Some(&text("3")));
        tree.set(&["a"], entries.clone(), true);
        assert_eq!(tree.get(&["a"]), Some(&entries));
        tree.set(&["a", "d", "e"], text("4"), true);
        assert_eq!(tree.get(&["a", "d", "e"]), Some(&text("4")));
        assert_eq!(tree.get(&["x"]), None);
    }

    #[test]
    fn text_is_read_as_what_is_asked_for() {
        use serde::Deserialize;
        assert_eq!(u32::deserialize(text(" 12 ")).ok(), Some(12));
        assert_eq!(f64::deserialize(text("1.5")).ok(), Some(1.5));
        assert_eq!(bool::deserialize(text("Yes")).ok(), Some(true));
        let strict = bool::deserialize(Node::Value(Value::String("yes".to_owned())));
        assert_eq!(
            strict.err().map(|e| e.to_string()).as_deref(),
            Some("expected `true` or `false`")
        );
        assert_eq!(String::deserialize(text("12")).ok(), Some("12".to_owned()));
        let refused = u32::deserialize(text("many")).err().map(|e| e.to_string());
        assert_eq!(refused.as_deref(), Some("expected u32"));
    }
}
