//! Tests of the schema check, on schemas schemars generates from Rust types: each module
//! declares the old and the new shape of a payload as two Rust types.

mod check;
mod enums;
mod fields;
mod registry;

use schemars::JsonSchema;
use serde_json::Value;

use super::compat::compare;
use super::Change;

/// The root schema of `T`, as the registry generates it.
fn schema<T: JsonSchema>() -> Value {
    schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The changes from `Old`'s schema to `New`'s.
fn changes<Old: JsonSchema, New: JsonSchema>() -> Vec<Change> {
    compare(&schema::<Old>(), &schema::<New>()).expect("schemars' schemas are readable")
}

/// The one change from `Old` to `New`.
fn only_change<Old: JsonSchema, New: JsonSchema>() -> Change {
    let mut all = changes::<Old, New>();
    assert_eq!(all.len(), 1, "expected one change: {all:#?}");
    all.remove(0)
}

/// `(backward, forward)` of a change.
fn directions(change: &Change) -> (bool, bool) {
    (change.backward(), change.forward())
}
