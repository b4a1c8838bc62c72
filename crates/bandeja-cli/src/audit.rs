//! The record of what an operator changed from the command line: one INFO line per retry,
//! replay, discard, purge or archive that changed rows (target `bandeja_cli::audit`), with
//! the operator (`$USER@host`), the message id when the command named one, the filter and
//! the count. The command's own output is the report; these lines are for a log kept with
//! `BANDEJA_LOG=info` (or `bandeja_cli::audit=info`), e.g. under cron or an ops runner.

use bandeja_core::admin::MessageFilter;
use bandeja_core::MessageId;

use crate::commands::discard;

/// Logs that `action` changed `changed` rows matching `filter` (about message `id`, when the
/// command named one).
pub(crate) fn changed(
    action: &str,
    id: Option<MessageId>,
    filter: Option<&MessageFilter>,
    changed: u64,
) {
    let operator = discard::operator();
    let filter = filter.map(|f| format!("{f:?}"));
    match id {
        Some(id) => tracing::info!(
            target: "bandeja_cli::audit",
            action,
            message_id = %id,
            operator = %operator,
            changed,
            "operator {action} from the command line"
        ),
        None => tracing::info!(
            target: "bandeja_cli::audit",
            action,
            operator = %operator,
            filter = filter.as_deref().unwrap_or("none"),
            changed,
            "operator {action} from the command line"
        ),
    }
}
