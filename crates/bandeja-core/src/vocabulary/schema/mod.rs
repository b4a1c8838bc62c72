//! The JSON Schemas of an application's payloads and their compatibility check (feature
//! `schema`): what `bandeja schema check` runs.
//!
//! The application derives [`schemars::JsonSchema`] on its payload types (re-exported
//! here, so it needs no dependency of its own), registers them in a [`SchemaRegistry`] —
//! every version it still reads, old ones kept as separate types with the same `TYPE` and
//! a lower `VERSION` — and exports a [`SchemaSnapshot`] (JSON, sorted keys). [`check`]
//! compares that export with itself (each version against the next) and with a committed
//! snapshot (each version against its committed copy), and reports every change with its
//! compatibility in both directions ([`Change`]):
//!
//! | change | backward (new reads old) | forward (old reads new) |
//! | --- | --- | --- |
//! | optional field added | yes | yes (unknown fields are ignored) |
//! | required field added | no (old messages lack it) | yes |
//! | field removed (or renamed) | yes | no (who used it loses it) |
//! | field became required / optional | no / yes | yes / no |
//! | type changed | no | no |
//! | enum value or variant added / removed | yes / no | no / yes |
//!
//! A breaking change at the same version fails the check: it needs a version bump. A bump
//! may break (that is what it is for) and is only reported.
//!
//! ```
//! use bandeja_core::schema::schemars::JsonSchema;
//! use bandeja_core::schema::{check, SchemaRegistry};
//! use bandeja_core::Payload;
//!
//! #[derive(serde::Serialize, serde::Deserialize, JsonSchema)]
//! #[schemars(crate = "bandeja_core::schema::schemars")]
//! struct OrderPlaced {
//!     order_id: i64,
//!     note: Option<String>,
//! }
//! impl Payload for OrderPlaced {
//!     const TYPE: &'static str = "shop.OrderPlaced";
//! }
//!
//! let current = SchemaRegistry::new().register::<OrderPlaced>().export()?;
//! let committed = bandeja_core::schema::SchemaSnapshot::from_json(&current.to_json())?;
//! let report = check(&current, Some(&committed));
//! assert!(!report.failed());
//! assert_eq!(report.lines()[0], "shop.OrderPlaced v1: unchanged since the snapshot");
//! # Ok::<(), bandeja_core::schema::SchemaError>(())
//! ```

mod change;
mod check;
pub mod compat;
mod error;
mod registry;
mod report;
mod shape;
mod snapshot;
mod variants;

#[cfg(test)]
mod tests;

pub use change::{Change, ChangeKind};
pub use check::{check, Finding};
pub use error::SchemaError;
pub use registry::SchemaRegistry;
pub use report::Report;
pub use snapshot::{SchemaSnapshot, VersionEntry, FORMAT};

/// schemars, for `#[derive(JsonSchema)]` on payload types without a dependency of one's
/// own: add `#[schemars(crate = "bandeja_core::schema::schemars")]` (or
/// `"bandeja::schemars"` through the facade) beside the derive.
pub use schemars;
