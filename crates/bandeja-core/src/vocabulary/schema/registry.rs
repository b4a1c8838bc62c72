//! The application's list of payload types whose schemas are exported: each registered
//! type (with its `TYPE` and `VERSION`) gives one entry of the [`SchemaSnapshot`].

use std::collections::BTreeMap;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

use super::compat::compare;
use super::error::SchemaError;
use super::snapshot::{SchemaSnapshot, VersionEntry};
use crate::envelope::Payload;

/// The payload types of an application, for [`export`](Self::export).
///
/// Register every version the application still reads — old versions kept as separate
/// types with the same `TYPE` and a lower `VERSION` (`OrderConfirmedV1`) — so the check
/// compares consecutive versions and notices one that is dropped while rows may hold it.
///
/// ```
/// use bandeja_core::schema::schemars::JsonSchema;
/// use bandeja_core::schema::SchemaRegistry;
/// use bandeja_core::Payload;
///
/// #[derive(serde::Serialize, serde::Deserialize, JsonSchema)]
/// #[schemars(crate = "bandeja_core::schema::schemars")]
/// struct OrderPlacedV1 {
///     order_id: i64,
/// }
/// impl Payload for OrderPlacedV1 {
///     const TYPE: &'static str = "shop.OrderPlaced";
/// }
///
/// #[derive(serde::Serialize, serde::Deserialize, JsonSchema)]
/// #[schemars(crate = "bandeja_core::schema::schemars")]
/// struct OrderPlaced {
///     order_id: i64,
///     coupon: Option<String>,
/// }
/// impl Payload for OrderPlaced {
///     const TYPE: &'static str = "shop.OrderPlaced";
///     const VERSION: u32 = 2;
/// }
///
/// let snapshot = SchemaRegistry::new()
///     .register::<OrderPlacedV1>()
///     .register::<OrderPlaced>()
///     .export()?;
/// assert!(snapshot.get("shop.OrderPlaced", 1).is_some());
/// assert!(snapshot.get("shop.OrderPlaced", 2).is_some());
/// # Ok::<(), bandeja_core::schema::SchemaError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct SchemaRegistry {
    entries: BTreeMap<(String, u32), Registered>,
    /// Registrations refused by [`register`](Self::register), reported by `export`.
    conflicts: Vec<Conflict>,
}

/// One registered payload type.
#[derive(Debug, Clone)]
struct Registered {
    rust_type: &'static str,
    upcasters_from: Vec<u32>,
    schema: Value,
}

/// Two Rust types with one message type and version but different schemas.
#[derive(Debug, Clone)]
struct Conflict {
    message_type: String,
    version: u32,
    first: &'static str,
    second: &'static str,
}

impl From<&Conflict> for SchemaError {
    fn from(c: &Conflict) -> SchemaError {
        SchemaError::Conflict {
            message_type: c.message_type.clone(),
            version: c.version,
            first: c.first,
            second: c.second,
        }
    }
}

impl SchemaRegistry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> SchemaRegistry {
        SchemaRegistry::default()
    }

    /// Adds `T` (its `TYPE`, `VERSION`, upcasters and JSON Schema). Registering the same
    /// type again changes nothing; another type with the same `TYPE` and `VERSION` but a
    /// different schema is an error [`export`](Self::export) returns (or use
    /// [`try_register`](Self::try_register) to have it at once).
    #[must_use]
    pub fn register<T: Payload + JsonSchema>(mut self) -> SchemaRegistry {
        if let Err(conflict) = self.add::<T>() {
            self.conflicts.push(conflict);
        }
        self
    }

    /// [`register`](Self::register), failing at once on a conflicting registration.
    ///
    /// # Errors
    ///
    /// [`SchemaError::Conflict`] when another type registered `T::TYPE` at `T::VERSION`
    /// with a different schema.
    pub fn try_register<T: Payload + JsonSchema>(mut self) -> Result<SchemaRegistry, SchemaError> {
        self.add::<T>().map_err(|c| SchemaError::from(&c))?;
        Ok(self)
    }

    fn add<T: Payload + JsonSchema>(&mut self) -> Result<(), Conflict> {
        let schema = SchemaSettings::draft2020_12()
            .into_generator()
            .into_root_schema_for::<T>()
            .to_value();
        let rust_type = std::any::type_name::<T>();
        let key = (T::TYPE.to_owned(), T::VERSION);
        if let Some(known) = self.entries.get(&key) {
            let same = known.rust_type == rust_type
                || compare(&known.schema, &schema).is_ok_and(|changes| changes.is_empty());
            return if same {
                Ok(())
            } else {
                Err(Conflict {
                    message_type: key.0,
                    version: key.1,
                    first: known.rust_type,
                    second: rust_type,
                })
            };
        }
        let mut upcasters_from: Vec<u32> = T::UPCASTERS.iter().map(|u| u.from()).collect();
        upcasters_from.sort_unstable();
        upcasters_from.dedup();
        let registered = Registered {
            rust_type,
            upcasters_from,
            schema,
        };
        self.entries.insert(key, registered);
        Ok(())
    }

    /// The snapshot of every registered type.
    ///
    /// # Errors
    ///
    /// [`SchemaError::Conflict`] for the first conflicting [`register`](Self::register).
    pub fn export(&self) -> Result<SchemaSnapshot, SchemaError> {
        if let Some(conflict) = self.conflicts.first() {
            return Err(conflict.into());
        }
        let mut snapshot = SchemaSnapshot::new();
        for ((message_type, version), registered) in &self.entries {
            let entry = VersionEntry {
                upcasters_from: registered.upcasters_from.clone(),
                schema: registered.schema.clone(),
            };
            snapshot.insert(message_type, *version, entry);
        }
        Ok(snapshot)
    }
}
