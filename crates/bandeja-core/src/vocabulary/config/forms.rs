//! How the configuration's values are written: durations as ISO-8601 text (read in human
//! form too), integers and numbers whose errors say what they take, tables of name →
//! value, and the word-valued enums. Each error is the reason shown after the key.
//!
//! Booleans and numbers need no form: the tree they are read from (`tree.rs`) reads them,
//! and turns text from the environment (`10`, `1.5`, `yes`) into what is asked for.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::{format_duration, parse_duration, CompletionMode, Enabled, HandlerTransaction};
use super::{MAX_BATCH_SIZE, MAX_RETRIES_LIMIT};

/// What every duration error says first.
pub(super) const DURATION_HINT: &str = "expected a duration like `PT5S` or `5s`";

/// A duration, or (`or_off`) a duration or `off`.
struct DurationText {
    or_off: bool,
}

impl DurationText {
    fn error<E: de::Error>(&self, reason: String) -> E {
        let off = if self.or_off { ", or `off`" } else { "" };
        E::custom(format!("{reason}{off}"))
    }

    fn bare_number<E: de::Error>(&self) -> E {
        self.error(format!(
            "{DURATION_HINT}, as a string: a bare number has no unit"
        ))
    }
}

impl<'de> Visitor<'de> for DurationText {
    type Value = Option<Duration>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&DURATION_HINT["expected ".len()..])?;
        f.write_str(if self.or_off { ", or `off`" } else { "" })
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        if self.or_off && text.trim().eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        match parse_duration(text) {
            Ok(duration) => Ok(Some(duration)),
            Err(reason) => Err(self.error(format!("{DURATION_HINT} ({reason})"))),
        }
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Err(self.bare_number())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Err(self.bare_number())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Err(self.bare_number())
    }
}

/// A duration, written `PT5S` (ISO-8601) and read in either form ([`parse_duration`]).
pub(super) mod duration {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let duration = d.deserialize_any(DurationText { or_off: false })?;
        duration.ok_or_else(|| de::Error::custom(DURATION_HINT))
    }
}

/// A duration or `off` (`None`).
pub(super) mod optional_duration {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&format_duration(*d)),
            None => s.serialize_str("off"),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        d.deserialize_any(DurationText { or_off: true })
    }
}

/// `batch-size`: an integer (range checked by validation, named in the error). Written
/// saturated at `i64::MAX`, the largest integer TOML holds (validation refuses it anyway).
pub(super) mod batch_size {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(n: &usize, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(i64::try_from(*n).unwrap_or(i64::MAX))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        d.deserialize_i64(Integer::new(format!("between 1 and {MAX_BATCH_SIZE}")))
    }
}

/// `max-retries`, `max-takeovers`: an integer (range checked by validation).
pub(super) fn retries<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    d.deserialize_i64(Integer::new(format!("between 0 and {MAX_RETRIES_LIMIT}")))
}

/// An integer of type `T`; `range` is what the key takes, for the error.
struct Integer<T> {
    range: String,
    value: PhantomData<T>,
}

impl<T> Integer<T> {
    fn new(range: String) -> Self {
        Integer {
            range,
            value: PhantomData,
        }
    }
}

impl<'de, T: TryFrom<i64> + TryFrom<u64>> Visitor<'de> for Integer<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an integer {}", self.range)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        T::try_from(n).map_err(|_| E::custom(format!("expected an integer {}", self.range)))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
        T::try_from(n).map_err(|_| E::custom(format!("expected an integer {}", self.range)))
    }
}

/// A table of name → `V`; `what` describes it for the error when something else is there.
struct TableOf<V> {
    what: &'static str,
    value: PhantomData<V>,
}

impl<'de, V: Deserialize<'de>> Visitor<'de> for TableOf<V> {
    type Value = BTreeMap<String, V>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut table = BTreeMap::new();
        while let Some((name, value)) = map.next_entry::<String, V>()? {
            table.insert(name, value);
        }
        Ok(table)
    }
}

/// One duration of a table.
struct Limit(Duration);

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        duration::deserialize(d).map(Limit)
    }
}

/// `handler-timeouts`: subscriber → duration.
pub(super) mod timeouts {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        table: &BTreeMap<String, Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(table.iter().map(|(k, v)| (k, format_duration(*v))))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, Duration>, D::Error> {
        let what = "a table of subscriber = duration, like `[events.inbox.handler-timeouts]` \
                    then `notification = \"PT10S\"`";
        let table = d.deserialize_map(TableOf::<Limit> {
            what,
            value: PhantomData,
        })?;
        Ok(table.into_iter().map(|(k, Limit(v))| (k, v)).collect())
    }
}

/// One topic name of `commands.topics`.
struct Topic(String);

impl<'de> Deserialize<'de> for Topic {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = Topic;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a topic name string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Topic, E> {
                Ok(Topic(s.to_owned()))
            }
        }
        d.deserialize_str(Text)
    }
}

/// `commands.topics`: service → topic.
pub(super) mod topics {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        table: &BTreeMap<String, String>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(table)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, String>, D::Error> {
        let what = "a table of service = topic, like `[commands.topics]` then \
                    `billing = \"billing.commands\"`";
        let table = d.deserialize_map(TableOf::<Topic> {
            what,
            value: PhantomData,
        })?;
        Ok(table.into_iter().map(|(k, Topic(v))| (k, v)).collect())
    }
}

/// A word read with `FromStr` (whose error is the reason); `expected` lists the words.
struct Word<T> {
    expected: &'static str,
    value: PhantomData<T>,
}

impl<T: FromStr<Err = String>> Visitor<'_> for Word<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expected)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
        s.parse().map_err(E::custom)
    }
}

fn word<'de, D: Deserializer<'de>, T: FromStr<Err = String>>(
    d: D,
    expected: &'static str,
) -> Result<T, D::Error> {
    d.deserialize_str(Word {
        expected,
        value: PhantomData,
    })
}

impl Serialize for Enabled {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Enabled::On => s.serialize_bool(true),
            Enabled::Off => s.serialize_bool(false),
            Enabled::Auto => s.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for Enabled {
    /// `true`, `false` or `"auto"` (as text also `yes`/`no`, `on`/`off`, `1`/`0`).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl Visitor<'_> for Either {
            type Value = Enabled;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`true`, `false` or `\"auto\"`")
            }
            fn visit_bool<E: de::Error>(self, on: bool) -> Result<Enabled, E> {
                Ok(if on { Enabled::On } else { Enabled::Off })
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Enabled, E> {
                s.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(Either)
    }
}

impl Serialize for HandlerTransaction {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for HandlerTransaction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        word(d, "`auto`, `message` or `batch`")
    }
}

impl Serialize for CompletionMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CompletionMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        word(d, "`update`, `delete` or `archive`")
    }
}
