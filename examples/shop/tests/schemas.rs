//! The shop's payload schemas against the committed snapshot `examples/shop/schemas.json`:
//! what CI runs so that a change to an event breaks the build unless it is compatible or
//! comes with a version bump.
//!
//! The export comes from the real binary (`shop --export-schemas`); the check is bandeja's
//! own, the function `bandeja schema check` runs (the `bandeja` binary belongs to another
//! package, which this test cannot build or locate reliably). After an intended change,
//! refresh the snapshot with `UPDATE_SCHEMAS=1 cargo test -p shop --test schemas` and
//! commit it.

use std::path::Path;
use std::process::{Command, Stdio};

use bandeja::schema::{check, SchemaSnapshot};

/// How to refresh the committed snapshot.
const REFRESH: &str = "UPDATE_SCHEMAS=1 cargo test -p shop --test schemas";

/// What `shop --export-schemas` prints.
fn exported() -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_shop"))
        .arg("--export-schemas")
        .stdin(Stdio::null())
        .output()
        .expect("run the shop binary");
    assert!(
        output.status.success(),
        "shop --export-schemas failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("the export is UTF-8")
}

#[test]
fn the_payload_schemas_are_compatible_with_the_committed_snapshot() {
    let snapshot_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas.json");
    let export = exported();
    let current = SchemaSnapshot::from_json(&export).expect("the export is a snapshot");
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        std::fs::write(&snapshot_path, &export).expect("write schemas.json");
        eprintln!("refreshed {}", snapshot_path.display());
        return;
    }
    let committed_text = std::fs::read_to_string(&snapshot_path).unwrap_or_else(|e| {
        panic!(
            "read {}: {e} (create it with `{REFRESH}`)",
            snapshot_path.display()
        )
    });
    let committed = SchemaSnapshot::from_json(&committed_text).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (rewrite it with `{REFRESH}`)",
            snapshot_path.display()
        )
    });
    let report = check(&current, Some(&committed));
    assert!(
        !report.failed(),
        "the shop's payloads changed in a way that breaks consumers without a version bump:\n\
         {}\n\nBump the payload's VERSION (keeping the old shape registered as its own type) \
         or undo the change. If it is intended and no stored or in-flight message can be of \
         the old shape, refresh the snapshot with `{REFRESH}` and commit schemas.json.",
        report.lines().join("\n")
    );
    assert!(
        export == committed_text,
        "the payloads changed compatibly, but examples/shop/schemas.json does not record it:\n\
         {}\n\nRefresh it with `{REFRESH}` and commit it, so the next change is checked \
         against this one.",
        report.lines().join("\n")
    );
}
