//! `bandeja purge` and `bandeja archive`: COMPLETED rows completed before a cutoff are
//! deleted, or moved into `<box>_archive`. `bandeja purge --archive`: the rows of the
//! archive tables archived before the cutoff are deleted.
//!
//! The rows are counted first, in the database ([`Admin::count`]; that number is what the
//! operator confirms). The change then runs box by box, the store deleting in short
//! batches, and the progress bar on stderr moves as each box is done.

use bandeja_core::admin::{Admin, MessageFilter};
use bandeja_core::{BoxKind, MessageStatus};
use chrono::{DateTime, Utc};

use crate::args::ago_from;
use crate::cli::RetentionArgs;
use crate::commands::change::{self, Decision};
use crate::error::CliError;
use crate::{output, progress, scan};

/// Which retention operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Delete the rows.
    Purge,
    /// Move them to the archive table.
    Archive,
    /// Delete the rows of the archive tables archived before the cutoff.
    PurgeArchive,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Purge => "purge",
            Action::Archive => "archive",
            Action::PurgeArchive => "purge_archive",
        }
    }

    fn question(self) -> &'static str {
        match self {
            Action::Purge => "Delete",
            Action::Archive => "Move to the archive tables",
            Action::PurgeArchive => "Delete from the archive tables",
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
            Action::PurgeArchive => store.purge_archive(box_kind, before).await?,
        })
    }
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
    // The rows the store call below takes, counted with the same horizon the store
    // compares: COMPLETED, completed before the cutoff; for the archive, the archived rows
    // archived before it.
    let due = match action {
        Action::PurgeArchive => MessageFilter {
            archived: true,
            archived_before: Some(cutoff),
            ..MessageFilter::default()
        },
        Action::Purge | Action::Archive => MessageFilter {
            status: Some(MessageStatus::Completed),
            completed_before: Some(cutoff),
            ..MessageFilter::default()
        },
    };
    let spinner = progress::spinner("counting rows");
    let counts = scan::count(store, &due, &boxes).await?;
    spinner.finish_and_clear();
    if action == Action::PurgeArchive {
        output::note(&format!(
            "purge_archive: the archived rows archived before {}",
            output::instant(Some(cutoff))
        ));
    }
    let Decision::Proceed(matched) = change::decide(
        action.name(),
        action.question(),
        &counts,
        args.confirm,
        true,
        json,
    )?
    else {
        return Ok(());
    };
    let bar = progress::bar(matched, action.name());
    let mut changed = 0u64;
    for (box_kind, _) in &counts {
        bar.set_message(format!("{} {box_kind}", action.name()));
        let n = action.apply(store, *box_kind, cutoff).await?;
        changed += n;
        // Rows completed between the count and now are taken too.
        if bar.position() + n > matched {
            bar.set_length(bar.position() + n);
        }
        bar.inc(n);
    }
    bar.finish_and_clear();
    crate::audit::changed(action.name(), None, Some(&due), changed);
    change::report_changed(action.name(), matched, changed, json)
}
