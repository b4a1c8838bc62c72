//! The steps every destructive command shares: say how many rows would change, stop on
//! `--dry-run` or when nothing matches, ask unless `--yes`, and report what changed.

use bandeja_core::BoxKind;

use crate::cli::Confirm;
use crate::confirm::confirm;
use crate::error::CliError;
use crate::output;
use crate::scan;

/// What a destructive command prints at the end (`--json`: this document).
#[derive(Debug, serde::Serialize)]
pub(crate) struct Changed {
    /// `retry`, `discard`, `replay`, `replay_outbox`, `purge`, `archive` or
    /// `purge_archive`.
    pub(crate) action: &'static str,
    /// Rows that matched when counted.
    pub(crate) matched: u64,
    /// Rows changed (0 on a dry run).
    pub(crate) changed: u64,
    /// Whether this was `--dry-run`.
    pub(crate) dry_run: bool,
}

/// Whether to go ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Change the rows; this many matched when counted.
    Proceed(u64),
    /// Stop: nothing matches, or `--dry-run`; [`Changed`] was printed.
    Done,
}

/// Says how many rows match (`counts`, on stderr), then decides: stop when nothing
/// matches or on `--dry-run` (printing the result), ask when `ask` and not `--yes`.
/// `question` is asked as "`<question>` 12 rows?".
pub(crate) fn decide(
    action: &'static str,
    question: &str,
    counts: &[(BoxKind, u64)],
    options: Confirm,
    ask: bool,
    json: bool,
) -> Result<Decision, CliError> {
    let matched: u64 = counts.iter().map(|(_, n)| n).sum();
    output::note(&format!("{action}: {} match", scan::describe(counts)));
    if matched == 0 || options.dry_run {
        report(
            &Changed {
                action,
                matched,
                changed: 0,
                dry_run: options.dry_run,
            },
            json,
        )?;
        return Ok(Decision::Done);
    }
    if ask {
        confirm(
            &format!("{question} {}?", output::rows(matched)),
            options.yes,
        )?;
    }
    Ok(Decision::Proceed(matched))
}

/// Prints the result of a change that went ahead.
pub(crate) fn report_changed(
    action: &'static str,
    matched: u64,
    changed: u64,
    json: bool,
) -> Result<(), CliError> {
    report(
        &Changed {
            action,
            matched,
            changed,
            dry_run: false,
        },
        json,
    )
}

/// Prints the result: `--json` the document, otherwise one sentence.
pub(crate) fn report(changed: &Changed, json: bool) -> Result<(), CliError> {
    if json {
        return output::json(changed);
    }
    let text = if changed.dry_run {
        format!(
            "dry run: {} would change; nothing changed",
            output::rows(changed.matched)
        )
    } else if changed.matched == 0 && changed.changed == 0 {
        "nothing to do: no row matches".to_owned()
    } else {
        format!(
            "{}: {} changed ({})",
            changed.action,
            output::rows(changed.changed),
            effect(changed.action)
        )
    };
    output::line(&text)
}

/// What the change did to the rows, in words.
fn effect(action: &str) -> &'static str {
    match action {
        "retry" => "back to PENDING, due now, retry and takeover counts 0",
        "replay" => "back to PENDING, to be handled again",
        "replay_outbox" => {
            "back to PENDING, to be sent again; subscribers that already have a message absorb it"
        }
        "purge" => "deleted",
        "archive" => "moved to the archive tables",
        "discard" => {
            "moved to the archive tables with who and why; `bandeja messages show ID` still \
             finds them"
        }
        "purge_archive" => "deleted from the archive tables",
        _ => "done",
    }
}
