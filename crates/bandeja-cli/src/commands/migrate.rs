//! `bandeja migrate`: creates or upgrades the tables (idempotent).

use bandeja_core::admin::Admin;

use crate::error::CliError;
use crate::output;

/// `{"migrated": true}`.
#[derive(serde::Serialize)]
struct Migrated {
    migrated: bool,
}

/// Runs the store's migrations.
pub(crate) async fn run<S: Admin>(store: &S, json: bool) -> Result<(), CliError> {
    store.migrate().await?;
    if json {
        output::json(&Migrated { migrated: true })
    } else {
        output::line("migrations applied: the four boxes and their archive tables are up to date")
    }
}
