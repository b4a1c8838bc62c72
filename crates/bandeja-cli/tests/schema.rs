//! `bandeja schema check CURRENT [--against SNAPSHOT]` run as a binary on snapshots the
//! test exports from Rust payload types (as an application does): a compatible change
//! passes, a breaking one at the same version fails with exit code 7 naming the type, the
//! version and the field, and the same change made with a version bump passes, reported
//! as breaking between the versions. It reads files only: no database.

mod common;

use std::path::Path;

use bandeja_conformance::fixtures::TempDir;
use bandeja_core::schema::schemars::JsonSchema;
use bandeja_core::schema::SchemaRegistry;
use bandeja_core::Payload;
use common::{bandeja, bandeja_with_env};

const TYPE: &str = "shop.order.OrderConfirmed";

/// Version 1, as committed.
#[derive(serde::Serialize, serde::Deserialize, JsonSchema)]
#[schemars(crate = "bandeja_core::schema::schemars")]
struct OrderConfirmedV1 {
    order_id: i64,
    total: String,
}
impl Payload for OrderConfirmedV1 {
    const TYPE: &'static str = TYPE;
}

/// Version 1 with an optional field added: compatible.
#[derive(serde::Serialize, serde::Deserialize, JsonSchema)]
#[schemars(crate = "bandeja_core::schema::schemars")]
struct WithNote {
    order_id: i64,
    total: String,
    note: Option<String>,
}
impl Payload for WithNote {
    const TYPE: &'static str = TYPE;
}

/// Version 1 with `total` made an integer: breaking, without a bump.
#[derive(serde::Serialize, serde::Deserialize, JsonSchema)]
#[schemars(crate = "bandeja_core::schema::schemars")]
struct TotalInCents {
    order_id: i64,
    total: i64,
}
impl Payload for TotalInCents {
    const TYPE: &'static str = TYPE;
}

/// The same change as version 2.
#[derive(serde::Serialize, serde::Deserialize, JsonSchema)]
#[schemars(crate = "bandeja_core::schema::schemars")]
struct OrderConfirmedV2 {
    order_id: i64,
    total: i64,
}
impl Payload for OrderConfirmedV2 {
    const TYPE: &'static str = TYPE;
    const VERSION: u32 = 2;
}

/// Writes the export of `registry` to `dir/name`: its path.
fn export(dir: &TempDir, name: &str, registry: SchemaRegistry) -> String {
    let path = dir.path().join(name);
    let snapshot = registry.export().expect("the registry exports");
    std::fs::write(&path, snapshot.to_json()).expect("write the snapshot");
    path.display().to_string()
}

/// The committed snapshot: version 1.
fn committed(dir: &TempDir) -> String {
    export(
        dir,
        "schemas.json",
        SchemaRegistry::new().register::<OrderConfirmedV1>(),
    )
}

#[test]
fn a_compatible_change_exits_0_and_is_reported() {
    let dir = TempDir::new("bandeja-cli-schema");
    let snapshot = committed(&dir);
    let current = export(
        &dir,
        "now.json",
        SchemaRegistry::new().register::<WithNote>(),
    );
    let run = bandeja(&["schema", "check", &current, "--against", &snapshot]).expect_code(0);
    assert!(
        run.stdout.contains(&format!(
            "{TYPE} v1: 1 change since the snapshot, compatible"
        )),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains("note: optional field added (backward: yes, forward: yes)"),
        "{run:#?}"
    );
    assert!(run.stdout.contains("schema check: OK"), "{run:#?}");
}

#[test]
fn a_breaking_change_at_the_same_version_exits_7_naming_the_type_the_version_and_the_field() {
    let dir = TempDir::new("bandeja-cli-schema");
    let snapshot = committed(&dir);
    let current = export(
        &dir,
        "now.json",
        SchemaRegistry::new().register::<TotalInCents>(),
    );
    let run = bandeja(&["schema", "check", &current, "--against", &snapshot]).expect_code(7);
    let head = format!("{TYPE} v1: BREAKING change since the snapshot without a version bump");
    assert!(run.stdout.contains(&head), "{run:#?}");
    assert!(
        run.stdout
            .contains("BREAKING total: type changed from string to integer"),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains(&format!(
            "error: schema check: FAILED ({TYPE} v1: 1 breaking change without a version \
             bump, at total)"
        )),
        "{run:#?}"
    );
}

#[test]
fn the_same_change_with_a_version_bump_exits_0_and_is_reported_as_breaking_between_versions() {
    let dir = TempDir::new("bandeja-cli-schema");
    let snapshot = committed(&dir);
    let registry = SchemaRegistry::new()
        .register::<OrderConfirmedV1>()
        .register::<OrderConfirmedV2>();
    let current = export(&dir, "now.json", registry);
    let run = bandeja(&["schema", "check", &current, "--against", &snapshot]).expect_code(0);
    assert!(
        run.stdout.contains(&format!(
            "{TYPE} v1 -> v2 (version bump): 1 change, breaking: allowed by the bump"
        )),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains("  total: type changed from string to integer (backward: NO, forward: NO)"),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains(&format!("{TYPE} v2: new, not in the snapshot yet")),
        "{run:#?}"
    );
    // Without a snapshot, only the versions are compared.
    let run = bandeja(&["schema", "check", &current]).expect_code(0);
    assert!(run.stdout.contains("v1 -> v2 (version bump)"), "{run:#?}");
    assert!(!run.stdout.contains("snapshot"), "{run:#?}");
}

#[test]
fn json_output_is_one_document_with_the_verdict_of_each_change() {
    let dir = TempDir::new("bandeja-cli-schema");
    let snapshot = committed(&dir);
    let current = export(
        &dir,
        "now.json",
        SchemaRegistry::new().register::<TotalInCents>(),
    );
    let run = bandeja(&[
        "schema",
        "check",
        &current,
        "--against",
        &snapshot,
        "--json",
    ]);
    let run = run.expect_code(7);
    let json = run.json();
    assert_eq!(json["ok"], false);
    let finding = &json["findings"][0];
    assert_eq!(
        (
            &finding["message_type"],
            &finding["version"],
            &finding["failed"]
        ),
        (&TYPE.into(), &1.into(), &true.into())
    );
    let change = &finding["changes"][0];
    assert_eq!(change["path"], "total");
    assert_eq!(change["change"], "type_changed");
    assert_eq!(
        (&change["backward"], &change["forward"]),
        (&false.into(), &false.into())
    );
}

#[test]
fn it_needs_no_database_and_reads_no_configuration() {
    let dir = TempDir::new("bandeja-cli-schema");
    let snapshot = committed(&dir);
    let env = [
        ("DATABASE_URL", "mysql://nobody@nowhere/none"),
        ("BANDEJA_NO_SUCH_KEY", "1"),
    ];
    let run = bandeja_with_env(
        &["schema", "check", &snapshot, "--against", &snapshot],
        &env,
    );
    run.expect_code(0);
}

#[test]
fn a_missing_or_malformed_file_is_a_usage_error_naming_the_file() {
    let dir = TempDir::new("bandeja-cli-schema");
    let snapshot = committed(&dir);
    let missing = dir.path().join("missing.json").display().to_string();
    let run = bandeja(&["schema", "check", &missing, "--against", &snapshot]).expect_code(2);
    assert!(
        run.stderr
            .contains(&format!("error: {missing}: cannot read the file: ")),
        "{run:#?}"
    );
    let bare = write(&dir.path().join("bare.json"), r#"{"type": "object"}"#);
    let run = bandeja(&["schema", "check", &snapshot, "--against", &bare]).expect_code(2);
    assert!(
        run.stderr.contains(&format!(
            "error: {bare}: not a schema snapshot of this format"
        )),
        "{run:#?}"
    );
    let broken = write(&dir.path().join("broken.json"), "{\"format\": ");
    let run = bandeja(&["schema", "check", &broken]).expect_code(2);
    assert!(
        run.stderr.contains(&format!(
            "error: {broken}: not a schema snapshot: invalid JSON"
        )),
        "{run:#?}"
    );
    assert!(run.stdout.is_empty(), "{run:#?}");
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).expect("write the file");
    path.display().to_string()
}
