//! Turns the end of an attempt into an [`Outcome`] through the status machine: the one place
//! where retry, backoff and FAILED are decided.

use crate::config::WorkerConfig;
use crate::error::FailureKind;
use crate::record::StoredMessage;
use crate::status::MessageStatus;
use crate::store::{Outcome, Resolution};

/// Longest `last_error` kept (bytes); longer messages are cut at a character boundary.
const MAX_ERROR_LEN: usize = 4000;

fn truncate(mut error: String) -> String {
    if error.len() > MAX_ERROR_LEN {
        let mut end = MAX_ERROR_LEN;
        while !error.is_char_boundary(end) {
            end -= 1;
        }
        error.truncate(end);
    }
    error
}

/// The outcome of a successful attempt.
pub(crate) fn success(message: &StoredMessage) -> Outcome {
    Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution: Resolution::Completed,
    }
}

/// Back to PENDING at once, nothing spent: the attempt did not happen (or was stopped) for
/// a reason outside the message (a shutdown, a lease running out, a broker outage).
pub(crate) fn release(message: &StoredMessage) -> Outcome {
    Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution: Resolution::Release,
    }
}

/// The outcome of a failed attempt: PENDING with `retry_count + 1` and a backoff while
/// retries are left, FAILED otherwise or at once for a permanent failure.
pub(crate) fn failure(
    message: &StoredMessage,
    config: &WorkerConfig,
    kind: FailureKind,
    error: String,
) -> Outcome {
    let outcome = decide(message, config, kind, error);
    super::transitions::failed(message, &outcome, kind == FailureKind::Permanent);
    outcome
}

/// [`failure`]'s decision, unlogged.
fn decide(
    message: &StoredMessage,
    config: &WorkerConfig,
    kind: FailureKind,
    error: String,
) -> Outcome {
    let error = truncate(error);
    let resolution = match kind {
        FailureKind::Permanent => Resolution::Failed {
            retry_count: message.retry_count,
            error,
        },
        FailureKind::Retriable => {
            // The row is PROCESSING (we hold its claim), so this transition is legal.
            match MessageStatus::Processing.complete(false, message.retry_count, config.max_retries)
            {
                Ok(after) if after.status == MessageStatus::Pending => Resolution::Retry {
                    retry_count: after.retry_count,
                    delay: config.backoff(after.retry_count, rand::random::<f64>()),
                    error,
                },
                Ok(after) => Resolution::Failed {
                    retry_count: after.retry_count,
                    error,
                },
                Err(transition) => Resolution::Failed {
                    retry_count: message.retry_count,
                    error: transition.to_string(),
                },
            }
        }
    };
    Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution,
    }
}

/// The outcome of an attempt that hit a transient conflict (a lock, an unreachable
/// database): back to PENDING after a short backoff, the retry count unchanged.
pub(crate) fn transient(message: &StoredMessage, config: &WorkerConfig, error: String) -> Outcome {
    let delay = config
        .backoff(1, rand::random::<f64>())
        .min(std::time::Duration::from_secs(1));
    super::transitions::conflict(message, delay, &error);
    Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution: Resolution::Retry {
            retry_count: message.retry_count,
            delay,
            error: truncate(error),
        },
    }
}

/// A row taken over after an expired lease more times than `max-takeovers` allows: the
/// workers holding it stopped while working on it, again and again (a message that
/// crashes its process). Takeovers are counted apart from failed attempts.
pub(crate) fn exhausted_by_crashes(
    message: &StoredMessage,
    config: &WorkerConfig,
) -> Option<Outcome> {
    if !(message.reclaimed() && message.takeovers > config.max_takeovers) {
        return None;
    }
    super::transitions::failed_by_crashes(message, config.max_takeovers);
    Some(Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution: Resolution::Failed {
            retry_count: message.retry_count,
            error: format!(
                "taken over {} times (more than max-takeovers = {}): the workers holding it stopped before finishing, each time (a crash, a kill, a lost connection); this message may be what stops them. Last error: {}",
                message.takeovers,
                config.max_takeovers,
                message.last_error.as_deref().unwrap_or("none")
            ),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken_over(holder: Option<&str>, takeovers: u32) -> StoredMessage {
        StoredMessage {
            takeovers,
            taken_over_from: holder.map(str::to_owned),
            ..crate::record::claimed_row_for_tests()
        }
    }

    #[test]
    fn only_takeovers_past_max_takeovers_fail_the_row() {
        let config = WorkerConfig::events_inbox_defaults();
        assert_eq!(config.max_takeovers, 3);
        assert!(exhausted_by_crashes(&taken_over(Some("w"), 3), &config).is_none());
        let failed = exhausted_by_crashes(&taken_over(Some("w"), 4), &config);
        assert!(
            matches!(&failed, Some(Outcome { resolution: Resolution::Failed { retry_count: 0, error }, .. }) if error.contains("max-takeovers")),
            "{failed:?}"
        );
    }
}
