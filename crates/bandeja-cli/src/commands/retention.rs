//! `bandeja purge` and `bandeja archive`: COMPLETED rows completed before a cutoff are
//! deleted, or moved into `<box>_archive`.
//!
//! The rows are counted first (that number is what the operator confirms). The change
//! then runs in steps of [`STEP`] rows, oldest first — one store call per step with an
//! earlier cutoff — so the progress bar on stderr moves as rows go.

use bandeja_core::admin::Admin;
use bandeja_core::{BoxKind, MessageStatus};
use chrono::{DateTime, Utc};

use crate::args::ago_from;
use crate::cli::RetentionArgs;
use crate::commands::change::{self, Changed, Decision};
use crate::error::CliError;
use crate::{progress, scan};

/// Rows per step of the progress bar.
const STEP: usize = 5_000;

/// Which retention operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Delete the rows.
    Purge,
    /// Move them to the archive table.
    Archive,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Purge => "purge",
            Action::Archive => "archive",
        }
    }

    fn question(self) -> &'static str {
        match self {
            Action::Purge => "Delete",
            Action::Archive => "Move to the archive tables",
        }
    }

    async fn apply<S: Admin>(
        self,
        store: &S,
        box_kind: BoxKind,
        before: DateTime<Utc>,
    ) -> Result<u64, CliError> {
        Ok(match self {
            Action::Purge => store.purge(box_kind, before).await?,
            Action::Archive => store.archive(box_kind, before).await?,
        })
    }
}

/// The COMPLETED rows of one box due for retention: their `completed_at`, oldest first.
struct Due {
    box_kind: BoxKind,
    completed: Vec<DateTime<Utc>>,
}

/// Purges or archives after confirmation.
pub(crate) async fn run<S: Admin>(
    store: &S,
    action: Action,
    args: &RetentionArgs,
    json: bool,
) -> Result<(), CliError> {
    let cutoff = ago_from(Utc::now(), args.older_than).map_err(CliError::Usage)?;
    let boxes: Vec<BoxKind> = BoxKind::ALL
        .into_iter()
        .filter(|b| args.box_kind.is_none_or(|only| only == *b))
        .collect();
    let due = count_due(store, &boxes, cutoff).await?;
    let counts: Vec<(BoxKind, u64)> = due
        .iter()
        .map(|d| {
            (
                d.box_kind,
                u64::try_from(d.completed.len()).unwrap_or(u64::MAX),
            )
        })
        .collect();
    let matched: u64 = counts.iter().map(|(_, n)| n).sum();
    let decision = change::decide(
        action.name(),
        action.question(),
        &counts,
        args.confirm,
        true,
        json,
    )?;
    if decision == Decision::Done {
        return Ok(());
    }
    let bar = progress::bar(matched, action.name());
    let mut changed = 0u64;
    for d in &due {
        bar.set_message(format!("{} {}", action.name(), d.box_kind));
        // Earlier cutoffs first (every STEP-th row), then the real one for the rest.
        let steps = d.completed.iter().skip(STEP).step_by(STEP).copied();
        for before in steps.chain([cutoff]) {
            let n = action.apply(store, d.box_kind, before).await?;
            changed += n;
            if bar.position() + n > matched {
                bar.set_length(bar.position() + n);
            }
            bar.inc(n);
        }
    }
    bar.finish_and_clear();
    change::report(
        &Changed {
            action: action.name(),
            matched,
            changed,
            dry_run: false,
        },
        json,
    )
}

/// Counts the COMPLETED rows of each box completed before `cutoff` (a spinner on stderr
/// while it reads).
async fn count_due<S: Admin>(
    store: &S,
    boxes: &[BoxKind],
    cutoff: DateTime<Utc>,
) -> Result<Vec<Due>, CliError> {
    let spinner = progress::spinner("counting rows");
    // A row completed before the cutoff was created before it too.
    let filter = bandeja_core::admin::MessageFilter {
        status: Some(MessageStatus::Completed),
        until: Some(cutoff),
        ..Default::default()
    };
    let mut due = Vec::with_capacity(boxes.len());
    for &box_kind in boxes {
        let mut completed = Vec::new();
        scan::each_row(store, &filter, box_kind, |row| {
            if let Some(at) = row.completed_at.filter(|at| *at < cutoff) {
                completed.push(at);
                spinner.inc(1);
            }
        })
        .await?;
        completed.sort_unstable();
        due.push(Due {
            box_kind,
            completed,
        });
    }
    spinner.finish_and_clear();
    Ok(due)
}
