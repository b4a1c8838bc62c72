//! External transport: publish a claimed batch with acknowledgements, trusting only what
//! can be checked, then write every outcome in one go.
//!
//! - A publish starts only within the rows' lease and waits at most its deadline
//!   ([`super::lease`]); rows whose lease is too short are released unpublished.
//! - Each publish call must return one result per message. A call that returns fewer has
//!   its unreported messages counted unavailable (released, published again later: brokers
//!   drop the copy by message id, inboxes dedup); a call that returns more, or does not
//!   return in time, has all of its messages counted unavailable. Only an `Ok` the
//!   transport returned for that very message marks a row COMPLETED.
//! - A command with no route fails at once (retrying cannot help); a message the broker
//!   refused spends a retry; if no message got through because the broker is unavailable,
//!   the cycle reports the outage so the worker backs off.

use crate::attempt;
use crate::context::Shared;
use crate::error::{FailureKind, Result};
use crate::record::{BoxKind, StoredMessage};
use crate::store::{Outcome, Store};
use crate::telemetry;
use crate::transport::{routing, wire, Instant, Outgoing, TransportError, TransportErrorKind};

use super::lease::{self, Lease};
use super::worker::span;

/// Concurrent publish calls a batch is split into.
const PUBLISH_CHUNKS: usize = 4;

/// A publish call whose results cannot all be matched to its messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unreported {
    /// Fewer results than messages: the messages past the last result have none.
    #[error("transport `{transport}` returned {got} results for {expected} messages and none for this one: it counts as not published (back to PENDING, published again); the transport must return one result per message")]
    Missing {
        /// The transport's name.
        transport: String,
        /// Results returned.
        got: usize,
        /// Messages sent.
        expected: usize,
    },
    /// More results than messages: which result is whose cannot be told.
    #[error("transport `{transport}` returned {got} results for {expected} messages, so no result can be matched to its message: none counts as published (back to PENDING, published again); the transport must return one result per message")]
    TooMany {
        /// The transport's name.
        transport: String,
        /// Results returned.
        got: usize,
        /// Messages sent.
        expected: usize,
    },
}

/// One result per message of a call of `expected` messages, from what the transport
/// returned (`None`: it did not return in time).
pub(crate) fn checked(
    transport: &str,
    expected: usize,
    returned: Option<Vec<std::result::Result<(), TransportError>>>,
) -> Vec<std::result::Result<(), TransportError>> {
    let Some(mut results) = returned else {
        return (0..expected)
            .map(|_| Err(TransportError::deadline()))
            .collect();
    };
    let got = results.len();
    if got > expected {
        tracing::warn!(
            transport,
            got,
            expected,
            "a publish call returned more results than messages: none counts"
        );
        let error = Unreported::TooMany {
            transport: transport.to_owned(),
            got,
            expected,
        };
        return (0..expected)
            .map(|_| Err(TransportError::unavailable(error.clone())))
            .collect();
    }
    if got < expected {
        tracing::warn!(transport, got, expected, "a publish call returned fewer results than messages: the unreported ones count as not published");
        let error = Unreported::Missing {
            transport: transport.to_owned(),
            got,
            expected,
        };
        results.extend((got..expected).map(|_| Err(TransportError::unavailable(error.clone()))));
    }
    results
}

/// Releases every claimed row unpublished (their lease is too short for a publish).
async fn release_all<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    claimed: &[StoredMessage],
    why: lease::LeaseTooShort,
) -> Result<()> {
    tracing::warn!(box = %box_kind, rows = claimed.len(), error = %why, "lease too short to publish: released");
    let outcomes: Vec<Outcome> = claimed.iter().map(crate::attempt::release).collect();
    shared.store.resolve(box_kind, token, &outcomes).await?;
    telemetry::dispatched(box_kind, claimed, &outcomes);
    Err(TransportError::unavailable(why).into())
}

/// Publishes `claimed` (held under `token` since `lease` began) and writes the outcomes.
pub(crate) async fn publish<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    claimed: &[StoredMessage],
    lease: Lease,
) -> Result<()> {
    let (Some(transport), Some(routing)) = (&shared.transport, &shared.routing) else {
        return Ok(());
    };
    let config = shared.config.group(box_kind);
    let deadline = match lease.publish_deadline(lease::publish_timeout(config), Instant::now()) {
        Ok(deadline) => deadline,
        Err(why) => return release_all(shared, box_kind, token, claimed, why).await,
    };
    let partitions = transport.partitions();
    let mut outcomes: Vec<Option<Outcome>> = vec![None; claimed.len()];
    let mut outgoing = Vec::with_capacity(claimed.len());
    let mut sent = Vec::with_capacity(claimed.len());
    for (index, message) in claimed.iter().enumerate() {
        if let Some(outcome) = attempt::exhausted_by_crashes(message, config) {
            outcomes[index] = Some(outcome);
            continue;
        }
        match routing.address(&message.record) {
            Ok(address) => {
                outgoing.push(Outgoing {
                    record: &message.record,
                    address,
                    partition: routing::partition_of(&message.record, partitions),
                    body: wire::encode(&message.record, Some(routing.service())),
                });
                sent.push(index);
            }
            Err(no_route) => {
                let _span = span(message).entered();
                // The row's error is what operators read: it says what to do as well.
                let reason = format!("{no_route}: {}", no_route.hint());
                outcomes[index] = Some(attempt::failure(
                    message,
                    config,
                    FailureKind::Permanent,
                    reason,
                ));
            }
        }
    }
    // A claim holds at most one message per key when ordering is on (later ones wait for
    // it), so the batch can go out in concurrent chunks without reordering a key.
    let chunk = if config.ordered {
        outgoing.len().div_ceil(PUBLISH_CHUNKS).max(1)
    } else {
        outgoing.len().max(1)
    };
    let kind = box_kind.kind();
    let gave_up = deadline + lease.grace();
    let publishing = futures::future::join_all(outgoing.chunks(chunk).map(|part| async move {
        let returned = tokio::time::timeout_at(gave_up, transport.publish(kind, part, deadline))
            .await
            .ok();
        checked(transport.name(), part.len(), returned)
    }));
    let results: Vec<_> = publishing.await.into_iter().flatten().collect();
    crate::fault::point("after-publish-before-mark");
    let mut unavailable = 0usize;
    let mut last_outage = None;
    for (index, result) in sent.into_iter().zip(results) {
        let message = &claimed[index];
        let _span = span(message).entered();
        outcomes[index] = Some(match result {
            Ok(()) => {
                tracing::debug!("published");
                attempt::success(message)
            }
            Err(e) if e.kind() == TransportErrorKind::Unavailable => {
                tracing::debug!(error = %e, "transport unavailable: released");
                unavailable += 1;
                last_outage = Some(e);
                crate::attempt::release(message)
            }
            Err(e) => {
                // Logged by `attempt::failure`: "will retry at …" or "FAILED after …".
                attempt::failure(message, config, FailureKind::Retriable, e.to_string())
            }
        });
    }
    let outcomes: Vec<Outcome> = outcomes.into_iter().flatten().collect();
    shared.store.resolve(box_kind, token, &outcomes).await?;
    telemetry::dispatched(box_kind, claimed, &outcomes);
    match last_outage {
        Some(outage) if unavailable == outgoing.len() => Err(outage.into()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(
        results: &[std::result::Result<(), TransportError>],
    ) -> Vec<Option<TransportErrorKind>> {
        results
            .iter()
            .map(|r| r.as_ref().err().map(TransportError::kind))
            .collect()
    }

    #[test]
    fn missing_results_count_as_unavailable_and_extra_ones_void_the_call() {
        let ok = || Ok(());
        let short = checked(
            "t",
            3,
            Some(vec![ok(), Err(TransportError::rejected("no"))]),
        );
        assert_eq!(
            kinds(&short),
            [
                None,
                Some(TransportErrorKind::Rejected),
                Some(TransportErrorKind::Unavailable)
            ]
        );
        assert!(short[2]
            .as_ref()
            .is_err_and(|e| e.to_string().contains("2 results for 3")));
        let long = checked("t", 2, Some(vec![ok(), ok(), ok()]));
        assert_eq!(kinds(&long), [Some(TransportErrorKind::Unavailable); 2]);
        let late = checked("t", 2, None);
        assert_eq!(kinds(&late), [Some(TransportErrorKind::Unavailable); 2]);
        assert_eq!(kinds(&checked("t", 1, Some(vec![ok()]))), [None]);
    }
}
