//! The registry and the snapshot: deterministic export, conflicts, reading files.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{SchemaError, SchemaRegistry, SchemaSnapshot, FORMAT};
use crate::upcast::{UpcastError, Upcaster};
use crate::Payload;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Placed {
    order_id: i64,
    customer: String,
}
impl Payload for Placed {
    const TYPE: &'static str = "shop.Placed";
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct OtherPlaced {
    order_id: String,
}
impl Payload for OtherPlaced {
    const TYPE: &'static str = "shop.Placed";
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct PlacedV3 {
    order_id: i64,
    customer: String,
}
fn same(v: serde_json::Value) -> Result<serde_json::Value, UpcastError> {
    Ok(v)
}
impl Payload for PlacedV3 {
    const TYPE: &'static str = "shop.Placed";
    const VERSION: u32 = 3;
    const UPCASTERS: &'static [Upcaster] = &[Upcaster::new(2, same), Upcaster::new(1, same)];
}

#[test]
fn the_export_is_sorted_json_that_reads_back_equal() {
    let registry = || {
        SchemaRegistry::new()
            .register::<PlacedV3>()
            .register::<Placed>()
    };
    let snapshot = registry().export().expect("exports");
    let text = snapshot.to_json();
    assert_eq!(text, registry().export().expect("exports").to_json());
    assert!(text.ends_with("}\n"));
    assert!(text.starts_with(&format!("{{\n  \"format\": \"{FORMAT}\",\n  \"types\"")));
    // Versions in order, keys of the schemas in order (`properties` before `required`,
    // `customer` before `order_id`).
    let v1 = text.find("\"1\": {").expect("version 1");
    let v3 = text.find("\"3\": {").expect("version 3");
    assert!(v1 < v3);
    let customer = text.find("\"customer\"").expect("customer");
    assert!(customer < text.find("\"order_id\"").expect("order_id"));
    assert_eq!(SchemaSnapshot::from_json(&text).expect("reads"), snapshot);
    let v3 = snapshot.get("shop.Placed", 3).expect("version 3");
    assert_eq!(v3.upcasters_from, [1, 2]);
    assert!(snapshot
        .get("shop.Placed", 1)
        .expect("v1")
        .upcasters_from
        .is_empty());
}

#[test]
fn one_version_registered_by_two_types_with_different_schemas_is_an_error() {
    let again = SchemaRegistry::new()
        .register::<Placed>()
        .register::<Placed>();
    assert!(again.export().is_ok());
    let twice = SchemaRegistry::new()
        .register::<Placed>()
        .register::<OtherPlaced>();
    let error = twice.export().expect_err("conflict");
    assert!(matches!(
        &error,
        SchemaError::Conflict { message_type, version: 1, .. } if message_type == "shop.Placed"
    ));
    let text = error.to_string();
    assert!(
        text.contains("Placed`") && text.contains("OtherPlaced`"),
        "{text}"
    );
    let at_once = SchemaRegistry::new()
        .try_register::<Placed>()
        .and_then(SchemaRegistry::try_register::<OtherPlaced>);
    assert!(matches!(at_once, Err(SchemaError::Conflict { .. })));
}

#[test]
fn a_file_that_is_not_a_snapshot_is_refused_saying_what_is_wrong() {
    let error = SchemaSnapshot::from_json("{ not json").expect_err("not JSON");
    assert!(
        error
            .to_string()
            .starts_with("not a schema snapshot: invalid JSON: "),
        "{error}"
    );
    let error = SchemaSnapshot::from_json(r#"{"type": "object"}"#).expect_err("a bare schema");
    assert!(
        error
            .to_string()
            .contains("`format` is null, expected \"bandeja.schemas/1\""),
        "{error}"
    );
    let bad = format!(r#"{{"format": "{FORMAT}", "types": {{"shop.Placed": {{"one": {{}}}}}}}}"#);
    let error = SchemaSnapshot::from_json(&bad).expect_err("a bad version");
    let text = error.to_string();
    assert!(
        text.contains("at `types.shop.Placed") && text.contains("number"),
        "{text}"
    );
    let missing = format!(r#"{{"format": "{FORMAT}", "types": {{"shop.Placed": {{"1": {{}}}}}}}}"#);
    let error = SchemaSnapshot::from_json(&missing).expect_err("no schema");
    assert!(
        error.to_string().contains("missing field `schema`"),
        "{error}"
    );
}
