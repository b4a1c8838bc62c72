//! `bandeja replay`: COMPLETED inbox rows matching the filters back to PENDING, so their
//! handlers run again (after fixing a handler bug). `bandeja replay --outbox`: COMPLETED
//! outbox rows sent again ([`outbox`]). Without any filter both are refused unless
//! `--all` is given: running every handler again is never a default.

use bandeja_core::admin::{Admin, MessageFilter};
use bandeja_core::{BoxKind, MessageStatus};

mod outbox;

use crate::cli::ReplayArgs;
use crate::commands::change::{self, Decision};
use crate::error::CliError;
use crate::scan;

/// Why a replay without any filter is refused (as `POST /replay` refuses one).
const UNFILTERED: &str = "replay needs at least one filter (--box, --tenant, --type, \
     --subscriber, --since or --until): without one it would run every handler again on \
     every message it ever handled. Narrow it, or ask for all of them explicitly \
     (`bandeja replay --all`)";

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
    if !args.all && filter == MessageFilter::default() {
        return Err(CliError::Usage(UNFILTERED.to_owned()));
    }
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
    crate::audit::changed("replayed", filter.id, Some(&filter), changed);
    change::report_changed("replay", matched, changed, json)
}
