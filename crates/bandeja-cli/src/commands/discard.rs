//! `bandeja discard`: FAILED rows moved into their box's archive table with who discarded
//! them and why — for a poison message that must never run, where `retry` would only fail
//! again. One message id (its FAILED rows, narrowed by `--box` / `--subscriber`), or every
//! FAILED row matching the filters with `--all-failed`. Counted and confirmed first, as
//! `purge` is; `messages show` and `messages list --archived` still find the rows.

use std::path::Path;

use bandeja_core::admin::{Admin, Discard};
use bandeja_core::{BoxKind, MessageStatus};

use crate::cli::DiscardArgs;
use crate::commands::change::{self, Decision};
use crate::error::CliError;
use crate::scan;

/// Counts, confirms, discards.
pub(crate) async fn run<S: Admin>(
    store: &S,
    args: &DiscardArgs,
    json: bool,
) -> Result<(), CliError> {
    let discard = Discard {
        by: who(args.by.as_deref())?,
        reason: required("--reason", &args.reason)?,
    };
    if let Some(id) = args.id {
        if store.show(id).await?.is_empty() {
            return Err(CliError::NotFound(format!(
                "no row of any box holds message {id}"
            )));
        }
    }
    let failed = args.filters.to_filter(Some(MessageStatus::Failed), args.id);
    failed
        .check_discard()
        .map_err(|e| CliError::Usage(e.get_ref().to_string()))?;
    let boxes = scan::boxes(&failed, &BoxKind::ALL);
    let counts = scan::count(store, &failed, &boxes).await?;
    let Decision::Proceed(matched) = change::decide(
        "discard",
        "Discard (move to the archive tables)",
        &counts,
        args.confirm,
        true,
        json,
    )?
    else {
        return Ok(());
    };
    let changed = store.discard(&failed, &discard).await?;
    crate::audit::changed("discarded", args.id, Some(&failed), changed);
    change::report_changed("discard", matched, changed, json)
}

/// `text`, trimmed; blank is a usage error naming `option`.
fn required(option: &str, text: &str) -> Result<String, CliError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(CliError::Usage(format!(
            "{option} must not be blank: say why the rows are discarded (it is recorded on \
             each of them)"
        )));
    }
    Ok(text.to_owned())
}

/// `--by`, or else [`operator`].
fn who(by: Option<&str>) -> Result<String, CliError> {
    match by {
        Some(by) => required("--by", by),
        None => Ok(operator()),
    }
}

/// Who runs this command: `$USER@hostname`.
pub(crate) fn operator() -> String {
    format!("{}@{}", user(), host())
}

/// The operator's login name: `USER`, else `LOGNAME`, else `unknown`.
fn user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The host name: `HOSTNAME`, else the kernel's (`/proc/sys/kernel/hostname`,
/// `/etc/hostname`), else `localhost`.
fn host() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| {
            ["/proc/sys/kernel/hostname", "/etc/hostname"]
                .iter()
                .find_map(|path| std::fs::read_to_string(Path::new(path)).ok())
        })
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_reason_or_author_is_a_usage_error() {
        assert_eq!(
            required("--reason", "  poison  ").ok().as_deref(),
            Some("poison")
        );
        let error = required("--reason", " ").expect_err("blank");
        assert_eq!(error.exit().code(), 2);
        assert!(
            error.to_string().starts_with("--reason must not be blank"),
            "{error}"
        );
        assert_eq!(who(Some("ana")).ok().as_deref(), Some("ana"));
        assert!(who(Some("")).is_err());
        let default = who(None).expect("a default author");
        assert!(
            default.contains('@') && !default.ends_with('@'),
            "{default}"
        );
    }
}
