//! `bandeja replay --outbox`: COMPLETED outbox rows matching the filters (and matching
//! rows of the outbox archive tables, moved back) go back to PENDING and are relayed
//! again. A subscriber that already has a message absorbs it; one that lacks it (a new
//! subscriber, with the in-process transport) gets it.
//!
//! Without a narrowing filter (--type, --since/--until, --id, --tenant) the command is
//! refused unless --all is given: re-sending everything ever emitted is never a default.

use bandeja_core::admin::{Admin, OutboxReplay, ReplayRefused};
use bandeja_core::StoreError;

use crate::cli::ReplayArgs;
use crate::commands::change::{self, Decision};
use crate::error::CliError;
use crate::output;

/// The action name in the notes and the JSON document.
const ACTION: &str = "replay_outbox";

/// A refusal of the request itself is a usage error (exit 2); anything else as usual.
fn refused(error: StoreError) -> CliError {
    match ReplayRefused::of(&error) {
        Some(reason) if reason.is_bad_filter() => CliError::Usage(reason.to_string()),
        _ => CliError::Store(error),
    }
}

/// Counts, confirms, replays.
pub(crate) async fn run<S: Admin>(
    store: &S,
    args: &ReplayArgs,
    json: bool,
) -> Result<(), CliError> {
    let replay = OutboxReplay {
        filter: args.filters.to_filter(None, args.id),
        all: args.all,
    };
    let boxes = replay.boxes().map_err(refused)?;
    let mut counts = Vec::with_capacity(boxes.len());
    for box_kind in boxes {
        let n = store
            .count_outbox_replay(&replay.in_box(box_kind))
            .await
            .map_err(refused)?;
        counts.push((box_kind, n));
    }
    let decision = change::decide(ACTION, "Send again", &counts, args.confirm, true, json)?;
    if counts.iter().all(|(_, n)| *n == 0) {
        output::note(
            "hint: an outbox in `delete` completion mode keeps no COMPLETED rows (they are \
             deleted once sent), so nothing of it can be replayed",
        );
    }
    let Decision::Proceed(matched) = decision else {
        return Ok(());
    };
    let changed = store.replay_outbox(&replay).await.map_err(refused)?;
    crate::audit::changed(
        "replayed the outbox",
        replay.filter.id,
        Some(&replay.filter),
        changed,
    );
    change::report_changed(ACTION, matched, changed, json)
}
