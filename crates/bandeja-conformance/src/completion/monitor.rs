//! The staleness monitor's verdict: PENDING and PROCESSING rows past their threshold are
//! FAILED with the reason, by the store and by the runtime's monitor (the staleness suite
//! checks what it spares).

use std::time::Duration;

use bandeja_core::config::Enabled;
use bandeja_core::envelope::Event;
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Outcome, Resolution, StaleRequest};

use crate::fixtures::{fast_config, Ping};
use crate::store::{emit, ping, request, rows};

/// Stale PENDING and PROCESSING rows become FAILED with the reason; younger rows, and
/// rows in other statuses, are left alone. The PROCESSING row's lease has run out (its
/// worker died): a row under a live lease is never stale (see `conformance::staleness`).
pub async fn staleness_marks_pending_and_processing_rows_failed_with_the_reason<S: Inspect>(
    store: S,
) {
    let records: Vec<_> = (0..2).map(|n| ping(n, &format!("k{n}"))).collect();
    emit(&store, &records).await;
    let mut expired = request("w", 1);
    expired.lease = Duration::ZERO;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &expired)
        .await
        .expect("claim");
    assert_eq!(claimed[0].record.id, records[0].id);
    let young = StaleRequest {
        pending: Duration::from_secs(3_600),
        processing: Duration::from_secs(3_600),
        pending_reason: "too long pending",
        processing_reason: "too long processing",
    };
    let report = store
        .fail_stale(BoxKind::OutboxEvents, &young)
        .await
        .expect("stale");
    assert_eq!((report.pending, report.processing), (0, 0));
    let now = StaleRequest {
        pending: Duration::ZERO,
        processing: Duration::ZERO,
        ..young
    };
    let report = store
        .fail_stale(BoxKind::OutboxEvents, &now)
        .await
        .expect("stale");
    assert_eq!((report.pending, report.processing), (1, 1));
    let rows = rows(&store, BoxKind::OutboxEvents).await;
    let seen: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.message.status,
                r.message.last_error.as_deref(),
                r.locked_by.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (MessageStatus::Failed, Some("too long processing"), None),
            (MessageStatus::Failed, Some("too long pending"), None),
        ]
    );
    // The holder of the stale claim can no longer complete it.
    let late = store
        .resolve(
            BoxKind::OutboxEvents,
            "w",
            &[Outcome {
                id: records[0].id,
                subscriber: None,
                resolution: Resolution::Completed,
            }],
        )
        .await;
    assert!(late.is_ok());
    assert_eq!(
        crate::store::rows(&store, BoxKind::OutboxEvents).await[0]
            .message
            .status,
        MessageStatus::Failed
    );
    let again = store
        .fail_stale(BoxKind::OutboxEvents, &now)
        .await
        .expect("stale");
    assert_eq!(
        (again.pending, again.processing),
        (0, 0),
        "FAILED rows stay"
    );
}

/// With `staleness.enabled`, a PENDING row nobody claims is marked FAILED by the monitor,
/// with a reason naming `staleness.pending`.
pub async fn staleness_monitor_runs_in_the_runtime<S: Inspect>(store: S) {
    let mut config = fast_config();
    config.events_outbox.enabled = Enabled::Off; // nobody dispatches: the row stays PENDING
    config.staleness.enabled = true;
    config.staleness.pending = Duration::from_millis(200);
    config.staleness.processing = Duration::from_secs(60);
    config.staleness.interval = Duration::from_millis(50);
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    bandeja
        .emit(&Event::new("Ping", "k", Ping { n: 1 }))
        .await
        .expect("emit");
    let rows = crate::runtime::wait_rows(&store, BoxKind::OutboxEvents, |rows| {
        rows.len() == 1 && rows[0].message.status == MessageStatus::Failed
    })
    .await;
    running.shutdown().await;
    let reason = rows[0].message.last_error.clone().unwrap_or_default();
    assert!(reason.contains("staleness.pending (PT0.2S)"), "{reason}");
    assert!(reason.contains("`outbox_events`"), "{reason}");
}
