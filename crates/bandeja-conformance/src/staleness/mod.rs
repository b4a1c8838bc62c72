//! The staleness conformance suite: the monitor fails only rows of a box that makes no
//! progress, never a row that is only waiting (in a backlog that drains, behind an older
//! live row of its key, or held under a live lease), with
//! [`staleness_conformance_tests!`](crate::staleness_conformance_tests).
//!
//! Staleness is about time, so these tests let time pass on purpose (`tokio::time::sleep`
//! past a threshold of a few hundred milliseconds); they never sleep to wait for work.
//! This module holds the helpers of the checks; the checks are in the topic modules below.

use std::time::Duration;

use bandeja_core::envelope::MessageId;
use bandeja_core::record::{BoxKind, StoredMessage};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, Outcome, Resolution, StaleRequest, Store};

use crate::store::{request, rows};

pub mod modes;
pub mod runtime;
pub mod waiting;

/// The threshold of the store-level checks.
const THRESHOLD: Duration = Duration::from_millis(500);

/// Lets more than [`THRESHOLD`] pass: time, not work, is what these checks wait for.
pub(crate) async fn past_the_threshold() {
    tokio::time::sleep(THRESHOLD + Duration::from_millis(200)).await;
}

fn stale_request() -> StaleRequest<'static> {
    StaleRequest {
        pending: THRESHOLD,
        processing: THRESHOLD,
        pending_reason: "stale pending",
        processing_reason: "stale processing",
    }
}

pub(crate) async fn fail_stale<S: Store>(store: &S, box_kind: BoxKind) -> (u64, u64) {
    let report = store
        .fail_stale(box_kind, &stale_request())
        .await
        .expect("fail stale");
    (report.pending, report.processing)
}

pub(crate) async fn claim_one<S: Store>(
    store: &S,
    box_kind: BoxKind,
    lease: Duration,
) -> StoredMessage {
    let mut request = request("w", 1);
    request.lease = lease;
    let mut claimed = store.claim(box_kind, &request).await.expect("claim");
    assert_eq!(claimed.len(), 1, "one row claimed");
    claimed.remove(0)
}

pub(crate) async fn resolve<S: Store>(
    store: &S,
    box_kind: BoxKind,
    message: &StoredMessage,
    r: Resolution,
) {
    let outcome = Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution: r,
    };
    store
        .resolve(box_kind, "w", &[outcome])
        .await
        .expect("resolve");
}

/// `(id, subscriber, status, last_error)` of every row of the box.
pub(crate) async fn statuses<S: Inspect>(
    store: &S,
    box_kind: BoxKind,
) -> Vec<(MessageId, Option<String>, MessageStatus, Option<String>)> {
    rows(store, box_kind)
        .await
        .into_iter()
        .map(|r| {
            (
                r.message.record.id,
                r.message.subscriber,
                r.message.status,
                r.message.last_error,
            )
        })
        .collect()
}
