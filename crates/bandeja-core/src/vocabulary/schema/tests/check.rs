//! The check: versions compared in turn, and with a committed snapshot.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::{check, Finding, SchemaRegistry, SchemaSnapshot, VersionEntry};
use crate::upcast::{UpcastError, Upcaster};
use crate::Payload;

const TYPE: &str = "shop.OrderConfirmed";

/// Version 1 as committed.
#[derive(Serialize, Deserialize, JsonSchema)]
struct OrderConfirmedV1 {
    order_id: i64,
    total: String,
}
impl Payload for OrderConfirmedV1 {
    const TYPE: &'static str = TYPE;
}

/// Version 1 with an optional field more.
#[derive(Serialize, Deserialize, JsonSchema)]
struct WithNote {
    order_id: i64,
    total: String,
    note: Option<String>,
}
impl Payload for WithNote {
    const TYPE: &'static str = TYPE;
}

/// Version 1 with `total` turned into cents: breaking, without a bump.
#[derive(Serialize, Deserialize, JsonSchema)]
struct TotalInCents {
    order_id: i64,
    total: i64,
}
impl Payload for TotalInCents {
    const TYPE: &'static str = TYPE;
}

/// The same change made right: version 2, with an upcaster from 1.
#[derive(Serialize, Deserialize, JsonSchema)]
struct OrderConfirmed {
    order_id: i64,
    total_cents: i64,
}

fn v1_to_v2(mut v1: Value) -> Result<Value, UpcastError> {
    let total = v1
        .as_object_mut()
        .and_then(|o| o.remove("total"))
        .ok_or_else(|| UpcastError::new("no `total`"))?;
    let cents = total
        .as_str()
        .and_then(|t| t.replace('.', "").parse::<i64>().ok())
        .ok_or_else(|| UpcastError::new("`total` is not an amount"))?;
    v1["total_cents"] = cents.into();
    Ok(v1)
}

impl Payload for OrderConfirmed {
    const TYPE: &'static str = TYPE;
    const VERSION: u32 = 2;
    const UPCASTERS: &'static [Upcaster] = &[Upcaster::new(1, v1_to_v2)];
}

/// Version 2 without an upcaster.
#[derive(Serialize, Deserialize, JsonSchema)]
struct OrderConfirmedNoUpcaster {
    order_id: i64,
    total_cents: i64,
}
impl Payload for OrderConfirmedNoUpcaster {
    const TYPE: &'static str = TYPE;
    const VERSION: u32 = 2;
}

fn committed() -> SchemaSnapshot {
    let text = SchemaRegistry::new()
        .register::<OrderConfirmedV1>()
        .export()
        .expect("exports")
        .to_json();
    SchemaSnapshot::from_json(&text).expect("reads back")
}

fn export(registry: SchemaRegistry) -> SchemaSnapshot {
    registry.export().expect("exports")
}

#[test]
fn the_same_schemas_pass_and_say_unchanged() {
    let report = check(&committed(), Some(&committed()));
    assert!(!report.failed());
    assert_eq!(
        report.lines(),
        [
            "shop.OrderConfirmed v1: unchanged since the snapshot",
            "schema check: OK (1 message type, compared with the snapshot: nothing breaks \
             without a version bump)",
        ]
    );
}

#[test]
fn a_compatible_change_at_the_same_version_passes_and_is_reported() {
    let current = export(SchemaRegistry::new().register::<WithNote>());
    let report = check(&current, Some(&committed()));
    assert!(!report.failed(), "{:#?}", report.lines());
    let lines = report.lines();
    let head = "shop.OrderConfirmed v1: 1 change since the snapshot, compatible";
    assert!(lines[0].starts_with(head), "{lines:#?}");
    assert_eq!(
        lines[1],
        "  note: optional field added (backward: yes, forward: yes)"
    );
}

#[test]
fn a_breaking_change_at_the_same_version_fails_naming_the_type_version_and_field() {
    let current = export(SchemaRegistry::new().register::<TotalInCents>());
    let report = check(&current, Some(&committed()));
    assert!(report.failed());
    let lines = report.lines();
    assert_eq!(
        lines[..2],
        [
            "shop.OrderConfirmed v1: BREAKING change since the snapshot without a version bump",
            "  BREAKING total: type changed from string to integer (backward: NO, forward: NO)",
        ]
    );
    assert!(lines[2].contains("VERSION = 2"), "{}", lines[2]);
    assert_eq!(
        report.summary(),
        "schema check: FAILED (shop.OrderConfirmed v1: 1 breaking change without a version \
         bump, at total)"
    );
}

#[test]
fn a_breaking_change_with_a_version_bump_passes_and_is_reported_between_the_versions() {
    let current = export(
        SchemaRegistry::new()
            .register::<OrderConfirmedV1>()
            .register::<OrderConfirmed>(),
    );
    let report = check(&current, Some(&committed()));
    assert!(!report.failed(), "{:#?}", report.lines());
    let bump = report
        .findings()
        .iter()
        .find_map(|f| match f {
            Finding::VersionBump {
                from: 1,
                to: 2,
                upcaster,
                changes,
                ..
            } => Some((*upcaster, changes)),
            _ => None,
        })
        .expect("the bump is reported");
    assert!(bump.0, "version 2 has an upcaster from 1");
    assert!(bump
        .1
        .iter()
        .any(|c| c.path() == "total" && c.is_breaking()));
    let lines = report.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("shop.OrderConfirmed v2: new, not in the snapshot")),
        "{lines:#?}"
    );
    let head = lines
        .iter()
        .find(|l| l.starts_with("shop.OrderConfirmed v1 -> v2"))
        .expect("a line for the bump");
    assert!(
        head.contains("breaking: allowed by the bump") && head.contains("upcaster from v1"),
        "{head}"
    );
    assert!(
        lines.contains(
            &"  total_cents: required field added (backward: through the upcaster, forward: yes)"
                .to_owned()
        ),
        "{lines:#?}"
    );
}

#[test]
fn without_an_upcaster_a_bump_says_plainly_what_old_messages_break() {
    let current = export(
        SchemaRegistry::new()
            .register::<OrderConfirmedV1>()
            .register::<OrderConfirmedNoUpcaster>(),
    );
    let report = check(&current, None);
    assert!(!report.failed());
    let lines = report.lines();
    assert_eq!(
        lines,
        [
            "shop.OrderConfirmed v1 -> v2 (version bump): 2 changes, breaking: allowed by the bump",
            "  total: required field removed (or renamed) (backward: yes, forward: NO)",
            "  total_cents: required field added (backward: NO, forward: yes)",
            "schema check: OK (1 message type: nothing breaks without a version bump)",
        ]
    );
}

#[test]
fn a_version_dropped_from_the_registry_fails() {
    let current = export(SchemaRegistry::new().register::<OrderConfirmed>());
    let report = check(&current, Some(&committed()));
    assert!(report.failed());
    assert!(report.findings().contains(&Finding::VersionRemoved {
        message_type: TYPE.into(),
        version: 1
    }));
    let lines = report.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("shop.OrderConfirmed v1: REMOVED")),
        "{lines:#?}"
    );
    assert!(report
        .summary()
        .contains("shop.OrderConfirmed v1: no longer registered"));
}

#[test]
fn the_json_report_carries_each_change_with_both_directions() {
    let current = export(SchemaRegistry::new().register::<TotalInCents>());
    let json = serde_json::to_value(check(&current, Some(&committed()))).expect("serializes");
    assert_eq!(json["ok"], false);
    let finding = &json["findings"][0];
    assert_eq!(finding["finding"], "same_version");
    assert_eq!(finding["message_type"], TYPE);
    assert_eq!(finding["version"], 1);
    assert_eq!(finding["failed"], true);
    let change = &finding["changes"][0];
    assert_eq!(change["path"], "total");
    assert_eq!(change["change"], "type_changed");
    assert_eq!(change["from"], "string");
    assert_eq!(change["to"], "integer");
    assert_eq!(change["backward"], false);
    assert_eq!(change["forward"], false);
    assert_eq!(change["breaking"], true);
    assert!(json["summary"]
        .as_str()
        .is_some_and(|s| s.contains("FAILED")));
}

#[test]
fn a_schema_that_cannot_be_read_fails_saying_why() {
    let mut broken = SchemaSnapshot::new();
    let schema = serde_json::json!({"$ref": "#/$defs/Missing"});
    let entry = VersionEntry {
        upcasters_from: vec![],
        schema,
    };
    broken.insert(TYPE, 1, entry);
    let report = check(&broken, Some(&committed()));
    assert!(report.failed());
    assert!(
        report.lines()[0].contains("`$ref` `#/$defs/Missing` points to nothing"),
        "{:#?}",
        report.lines()
    );
}
