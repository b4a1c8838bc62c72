//! The log lines of the rare transitions of a row, one per row, each naming the message
//! (id, type, subscriber, box): a lease taken over (WARN, and counted in
//! [`TAKEOVERS`](crate::telemetry::TAKEOVERS)), a failed attempt that will be retried
//! (INFO, "will retry at …"), a row gone FAILED (WARN: "FAILED after N attempts", or "FAILED
//! at once" for an error that is not retriable, or after too many takeovers).
//!
//! Nothing here runs for a message that succeeds: the hot path neither logs nor allocates.

use std::time::Duration;

use chrono::{SecondsFormat, Utc};

use crate::record::StoredMessage;
use crate::store::{Outcome, Resolution};
use crate::telemetry;

/// Longest error text a log line carries (bytes; the row keeps up to 4000).
const LOGGED_ERROR_LEN: usize = 300;

/// `error` cut at [`LOGGED_ERROR_LEN`] (at a character boundary), with `…` when cut.
fn short(error: &str) -> std::borrow::Cow<'_, str> {
    if error.len() <= LOGGED_ERROR_LEN {
        return error.into();
    }
    let mut end = LOGGED_ERROR_LEN;
    while !error.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &error[..end]).into()
}

/// Logs and counts the takeovers of a claim: each row taken over from an expired lease,
/// with the holder whose lease ran out when the store knows it.
pub(crate) fn taken_over(claimed: &[StoredMessage]) {
    for message in claimed.iter().filter(|m| m.reclaimed()) {
        let holder = message.taken_over_from.as_deref().filter(|h| *h != "?");
        tracing::warn!(
            box = %message.box_kind,
            message_id = %message.record.id,
            message_type = %message.record.message_type,
            subscriber = message.subscriber.as_deref(),
            previous_holder = holder,
            takeovers = message.takeovers,
            "lease taken over: the worker holding the message stopped renewing its lease (crashed, killed or cut off); this worker runs it again"
        );
        telemetry::taken_over(message);
    }
}

/// Logs the outcome of a failed attempt on `message` (`permanent`: the error said retrying
/// cannot help).
pub(crate) fn failed(message: &StoredMessage, outcome: &Outcome, permanent: bool) {
    let attempts = message.retry_count.saturating_add(1);
    match &outcome.resolution {
        Resolution::Retry {
            delay,
            error,
            retry_count,
        } => {
            let at = retry_at(*delay);
            tracing::info!(
                box = %message.box_kind,
                message_id = %message.record.id,
                message_type = %message.record.message_type,
                subscriber = message.subscriber.as_deref(),
                attempts,
                retry_count,
                error = %short(error),
                "attempt {attempts} failed; will retry at {at}"
            );
        }
        Resolution::Failed { error, .. } => {
            let why = match permanent {
                true => format!(
                    "message FAILED at attempt {attempts}, not retried: the error is not retriable"
                ),
                false => format!("message FAILED after {attempts} attempts: retries exhausted"),
            };
            tracing::warn!(
                box = %message.box_kind,
                message_id = %message.record.id,
                message_type = %message.record.message_type,
                subscriber = message.subscriber.as_deref(),
                attempts,
                error = %short(error),
                "{why}; retry it by hand once its cause is fixed"
            );
        }
        Resolution::Completed | Resolution::Release => {}
    }
}

/// Logs a transient conflict retried without spending a retry.
pub(crate) fn conflict(message: &StoredMessage, delay: Duration, error: &str) {
    let at = retry_at(delay);
    tracing::info!(
        box = %message.box_kind,
        message_id = %message.record.id,
        subscriber = message.subscriber.as_deref(),
        error = %short(error),
        "transient conflict (not the message's fault); will retry at {at} without spending a retry"
    );
}

/// Logs a row FAILED because its leases were taken over too often.
pub(crate) fn failed_by_crashes(message: &StoredMessage, max_takeovers: u32) {
    tracing::warn!(
        box = %message.box_kind,
        message_id = %message.record.id,
        message_type = %message.record.message_type,
        subscriber = message.subscriber.as_deref(),
        takeovers = message.takeovers,
        max_takeovers,
        "message FAILED after {} takeovers: the workers holding it stopped before finishing, each time; it may be what stops them",
        message.takeovers
    );
}

/// When a retry after `delay` is due, in UTC (RFC 3339, milliseconds).
fn retry_at(delay: Duration) -> String {
    chrono::Duration::from_std(delay)
        .ok()
        .and_then(|delay| Utc::now().checked_add_signed(delay))
        .map_or_else(
            || "a time too far ahead to write".to_owned(),
            |at| at.to_rfc3339_opts(SecondsFormat::Millis, true),
        )
}

#[cfg(test)]
mod tests;
