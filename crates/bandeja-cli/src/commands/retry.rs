//! `bandeja retry`: FAILED rows back to PENDING (due now, retry and takeover counts 0, the
//! resubmission recorded), for one message id or every FAILED row matching the filters.

use bandeja_core::admin::Admin;
use bandeja_core::{BoxKind, MessageStatus};

use crate::cli::RetryArgs;
use crate::commands::change::{self, Decision};
use crate::error::CliError;
use crate::scan;

/// Retries; asks first when more than one row would change.
pub(crate) async fn run<S: Admin>(store: &S, args: &RetryArgs, json: bool) -> Result<(), CliError> {
    if let Some(id) = args.id {
        if store.show(id).await?.is_empty() {
            return Err(CliError::NotFound(format!(
                "no row of any box holds message {id}"
            )));
        }
    }
    let filter = args.filters.to_filter(None, args.id);
    let failed = args.filters.to_filter(Some(MessageStatus::Failed), args.id);
    let boxes = scan::boxes(&filter, &BoxKind::ALL);
    let counts = scan::count(store, &failed, &boxes).await?;
    let ask = counts.iter().map(|(_, n)| n).sum::<u64>() > 1;
    let Decision::Proceed(matched) =
        change::decide("retry", "Retry", &counts, args.confirm, ask, json)?
    else {
        return Ok(());
    };
    let changed = store.retry(&filter).await?;
    crate::audit::changed("retried", args.id, Some(&filter), changed);
    change::report_changed("retry", matched, changed, json)
}
