//! The staleness monitor (seed 003): every `staleness.interval`, PENDING rows due for
//! longer than `staleness.pending` and PROCESSING rows claimed longer than
//! `staleness.processing` ago are marked FAILED with a reason naming the threshold, so
//! nothing stays silently stuck: FAILED rows show in the counters and the dashboard and
//! an operator can retry them.

use tokio::sync::watch;

use crate::config::{format_duration, Staleness};
use crate::record::BoxKind;
use crate::store::{StaleRequest, Store};

/// The `last_error` of a stale PENDING row of `box_kind`.
pub(crate) fn pending_reason(box_kind: BoxKind, settings: &Staleness) -> String {
    format!(
        "stale: PENDING and due for longer than staleness.pending ({}) without being claimed; \
         marked FAILED by the staleness monitor. Check that a worker runs for `{box_kind}` \
         (and that no older message of the same partition key is stuck), then retry it",
        format_duration(settings.pending)
    )
}

/// The `last_error` of a stale PROCESSING row of `box_kind`.
pub(crate) fn processing_reason(box_kind: BoxKind, settings: &Staleness) -> String {
    format!(
        "stale: PROCESSING for longer than staleness.processing ({}): its handler or publish \
         hung, or its worker died and nobody took the claim over; marked FAILED by the \
         staleness monitor. Check the `{box_kind}` worker and handler, then retry it",
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
