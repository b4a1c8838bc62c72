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
    Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution: Resolution::Retry {
            retry_count: message.retry_count,
            delay: config
                .backoff(1, rand::random::<f64>())
                .min(std::time::Duration::from_secs(1)),
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
    (message.reclaimed() && message.takeovers > config.max_takeovers).then(|| Outcome {
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

/// Logs the takeovers of a claim at WARN: each row taken over, and the holder whose lease
/// ran out.
pub(crate) fn log_takeovers(claimed: &[StoredMessage]) {
    for message in claimed {
        if let Some(holder) = &message.taken_over_from {
            tracing::warn!(
                box = %message.box_kind,
                message_id = %message.record.id,
                subscriber = message.subscriber.as_deref().unwrap_or_default(),
                holder = %holder,
                takeovers = message.takeovers,
                "lease taken over: the worker holding the message stopped renewing it (crashed, killed or cut off)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut out) = self.0.lock() {
                out.extend_from_slice(bytes);
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn taken_over(holder: Option<&str>, takeovers: u32) -> StoredMessage {
        StoredMessage {
            takeovers,
            taken_over_from: holder.map(str::to_owned),
            ..crate::record::claimed_row_for_tests()
        }
    }

    #[test]
    fn a_takeover_is_logged_at_warn_with_the_message_and_the_dead_holder() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let (taken, ordinary) = (taken_over(Some("host-1#2a.7"), 1), taken_over(None, 0));
        tracing::subscriber::with_default(subscriber, || {
            log_takeovers(&[taken.clone(), ordinary]);
        });
        let text = String::from_utf8(captured.0.lock().expect("log").clone()).expect("utf-8");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("WARN"), "{text}");
        assert!(text.contains(&taken.record.id.to_string()), "{text}");
        assert!(text.contains("holder=host-1#2a.7"), "{text}");
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
