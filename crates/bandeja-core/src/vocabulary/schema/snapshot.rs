//! The exported schemas of an application's payloads: per message type, per version, the
//! JSON Schema schemars generates. Written as JSON with sorted keys, so a committed
//! snapshot diffs cleanly and two exports of the same types are byte for byte equal.
//!
//! ```json
//! {
//!   "format": "bandeja.schemas/1",
//!   "types": {
//!     "shop.order.OrderConfirmed": {
//!       "1": { "schema": { "type": "object", "properties": { ... } } },
//!       "2": { "upcasters_from": [1], "schema": { ... } }
//!     }
//!   }
//! }
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::SchemaError;

/// The `format` of the snapshots this version of bandeja writes and reads.
pub const FORMAT: &str = "bandeja.schemas/1";

/// The schemas of an application's payloads, by message type and version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaSnapshot {
    format: String,
    types: BTreeMap<String, BTreeMap<u32, VersionEntry>>,
}

/// One version of one message type in a [`SchemaSnapshot`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionEntry {
    /// The versions the payload type of this version has upcasters from
    /// ([`Payload::UPCASTERS`](crate::Payload::UPCASTERS)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upcasters_from: Vec<u32>,
    /// The JSON Schema, as schemars generates it (keys sorted).
    pub schema: Value,
}

impl Default for SchemaSnapshot {
    fn default() -> Self {
        SchemaSnapshot {
            format: FORMAT.to_owned(),
            types: BTreeMap::new(),
        }
    }
}

impl SchemaSnapshot {
    /// An empty snapshot.
    #[must_use]
    pub fn new() -> SchemaSnapshot {
        SchemaSnapshot::default()
    }

    /// Reads a snapshot written by [`to_json`](Self::to_json).
    ///
    /// # Errors
    ///
    /// [`SchemaError::Malformed`] when the text is not JSON or not shaped as a snapshot
    /// (the message says where), [`SchemaError::Format`] when its `format` is not
    /// [`FORMAT`].
    pub fn from_json(text: &str) -> Result<SchemaSnapshot, SchemaError> {
        let malformed = |reason: String, source| SchemaError::Malformed { reason, source };
        let value: Value =
            serde_json::from_str(text).map_err(|e| malformed(format!("invalid JSON: {e}"), e))?;
        let format = value.get("format").cloned().unwrap_or(Value::Null);
        if format != FORMAT {
            return Err(SchemaError::Format {
                found: format.to_string(),
                expected: FORMAT,
            });
        }
        serde_path_to_error::deserialize(value).map_err(|e| {
            let reason = format!("at `{}`: {}", e.path(), e.inner());
            malformed(reason, e.into_inner())
        })
    }

    /// The snapshot as pretty-printed JSON with sorted keys, ending with a newline.
    #[must_use]
    pub fn to_json(&self) -> String {
        // Maps of `Value`s and strings always serialize.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The message types, in name order, each with its versions in order.
    pub fn types(&self) -> impl Iterator<Item = (&str, &BTreeMap<u32, VersionEntry>)> {
        self.types
            .iter()
            .map(|(name, versions)| (name.as_str(), versions))
    }

    /// The versions of `message_type` (none when it is not in the snapshot).
    #[must_use]
    pub fn versions(&self, message_type: &str) -> Option<&BTreeMap<u32, VersionEntry>> {
        self.types.get(message_type)
    }

    /// Version `version` of `message_type`.
    #[must_use]
    pub fn get(&self, message_type: &str, version: u32) -> Option<&VersionEntry> {
        self.types.get(message_type)?.get(&version)
    }

    /// Puts version `version` of `message_type` in the snapshot (its schema's keys
    /// sorted), replacing what was there.
    pub fn insert(&mut self, message_type: &str, version: u32, entry: VersionEntry) {
        let entry = VersionEntry {
            upcasters_from: entry.upcasters_from,
            schema: sorted(entry.schema),
        };
        self.types
            .entry(message_type.to_owned())
            .or_default()
            .insert(version, entry);
    }
}

/// `value` with the keys of every object in sorted order (whatever map serde_json uses).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let entries: BTreeMap<String, Value> =
                map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(entries.into_iter().collect::<Map<String, Value>>())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
