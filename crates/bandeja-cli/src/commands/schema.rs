//! `bandeja schema check`: reads the application's exported schemas (and a committed
//! snapshot), runs bandeja's compatibility check and prints its report. Files only: it
//! opens no database.

use std::path::Path;

use bandeja_core::schema::{check, SchemaSnapshot};

use crate::cli::SchemaCheckArgs;
use crate::error::CliError;
use crate::output;

/// Checks, prints the report (text, or one JSON document) and fails with
/// [`CliError::SchemaBreaking`] when something breaks without a version bump.
pub(crate) fn run(args: &SchemaCheckArgs, json: bool) -> Result<(), CliError> {
    let current = read(&args.current)?;
    let against = args.against.as_deref().map(read).transpose()?;
    let report = check(&current, against.as_ref());
    if json {
        output::json(&report)?;
    } else {
        for line in report.lines() {
            output::line(&line)?;
        }
    }
    if report.failed() {
        return Err(CliError::SchemaBreaking {
            summary: report.summary(),
        });
    }
    Ok(())
}

/// The snapshot in the file `path`.
fn read(path: &Path) -> Result<SchemaSnapshot, CliError> {
    let file_error = |reason: String| CliError::SchemaFile {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| file_error(format!("cannot read the file: {e}")))?;
    SchemaSnapshot::from_json(&text).map_err(|e| file_error(e.to_string()))
}
