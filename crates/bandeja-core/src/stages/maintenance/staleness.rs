//! The staleness monitor (seed 003): every `staleness.interval` it asks the store to mark
//! FAILED the rows of a box that makes no progress, so nothing stays silently stuck:
//! FAILED rows show in the counters and the dashboard and an operator can retry them.
//!
//! It judges the box, not a row's age alone ([`Store::fail_stale`]): a row is stale only
//! when it has been claimable for longer than its threshold (PENDING and due for longer
//! than `staleness.pending`; PROCESSING with a lease that ran out longer than
//! `staleness.processing` ago), it heads its partition key, and its box (for an inbox: its
//! subscriber's rows) completed, claimed, renewed, retried or failed nothing within that
//! threshold. A row waiting in a backlog that drains, behind an older live row of its key,
//! or held under a live (renewed) lease is never failed.

use tokio::sync::watch;

use crate::config::{format_duration, Staleness};
use crate::record::BoxKind;
use crate::store::{StaleRequest, Store};

/// The `last_error` of a stale PENDING row of `box_kind`.
pub(crate) fn pending_reason(box_kind: BoxKind, settings: &Staleness) -> String {
    format!(
        "stale: PENDING and due for longer than staleness.pending ({}) without being claimed, \
         while `{box_kind}` completed nothing for as long; marked FAILED by the staleness \
         monitor. Check that a worker runs for `{box_kind}` (enabled, not crashing, its \
         subscriber registered), then retry it",
        format_duration(settings.pending)
    )
}

/// The `last_error` of a stale PROCESSING row of `box_kind`.
pub(crate) fn processing_reason(box_kind: BoxKind, settings: &Staleness) -> String {
    format!(
        "stale: PROCESSING with a lease that ran out more than staleness.processing ({}) ago \
         and was never taken over, while `{box_kind}` made no progress: its worker died and \
         no other runs; marked FAILED by the staleness monitor. Check the `{box_kind}` \
         workers, then retry it",
        format_duration(settings.processing)
    )
}

/// Marks the stale rows of the four boxes every `interval` until shutdown.
pub(crate) async fn run<S: Store>(store: S, settings: Staleness, mut stop: watch::Receiver<bool>) {
    let reasons = BoxKind::ALL.map(|b| {
        (
            b,
            pending_reason(b, &settings),
            processing_reason(b, &settings),
        )
    });
    loop {
        for (box_kind, pending_reason, processing_reason) in &reasons {
            let request = StaleRequest {
                pending: settings.pending,
                processing: settings.processing,
                pending_reason,
                processing_reason,
            };
            match store.fail_stale(*box_kind, &request).await {
                Ok(report) if report.pending + report.processing > 0 => tracing::warn!(
                    box = %box_kind,
                    pending = report.pending,
                    processing = report.processing,
                    "staleness monitor marked stale rows FAILED"
                ),
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(box = %box_kind, %error, "staleness check failed; trying again later")
                }
            }
        }
        if !super::pause(&mut stop, settings.interval).await {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_the_threshold_and_the_box() {
        let settings = Staleness::default();
        let pending = pending_reason(BoxKind::InboxEvents, &settings);
        assert!(pending.contains("staleness.pending (PT1H)"), "{pending}");
        assert!(pending.contains("`inbox_events`"), "{pending}");
        let processing = processing_reason(BoxKind::OutboxCommands, &settings);
        assert!(
            processing.contains("staleness.processing (PT1H)"),
            "{processing}"
        );
        assert!(processing.contains("`outbox_commands`"), "{processing}");
    }
}
