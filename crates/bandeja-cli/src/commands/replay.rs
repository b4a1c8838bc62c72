//! `bandeja replay`: COMPLETED inbox rows matching the filters back to PENDING, so their
//! handlers run again (after fixing a handler bug). `bandeja replay --outbox`: COMPLETED
//! outbox rows sent again ([`outbox`]).

use bandeja_core::admin::Admin;
use bandeja_core::{BoxKind, MessageStatus};

mod outbox;

use crate::cli::ReplayArgs;
use crate::commands::change::{self, Decision};
use crate::error::CliError;
use crate::scan;

/// The boxes replay applies to.
const INBOXES: [BoxKind; 2] = [BoxKind::InboxEvents, BoxKind::InboxCommands];

/// Replays after confirmation.
pub(crate) async fn run<S: Admin>(
    store: &S,
    args: &ReplayArgs,
    json: bool,
) -> Result<(), CliError> {
    if args.outbox {
        return outbox::run(store, args, json).await;
    }
    let filter = args.filters.to_filter(None, None);
    filter
        .check_replay()
        .map_err(|e| CliError::Usage(e.get_ref().to_string()))?;
    let completed = args.filters.to_filter(Some(MessageStatus::Completed), None);
    let boxes = scan::boxes(&filter, &INBOXES);
    let counts = scan::count(store, &completed, &boxes).await?;
    let Decision::Proceed(matched) =
        change::decide("replay", "Replay", &counts, args.confirm, true, json)?
    else {
        return Ok(());
    };
    let changed = store.replay(&filter).await?;
    change::report_changed("replay", matched, changed, json)
}
