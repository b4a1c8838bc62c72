//! The life cycle of a message in a box: one enum, one string form, one transition function.
//!
//! ```text
//! PENDING ──process()──▶ PROCESSING ──complete(true)──▶ COMPLETED
//!    ▲                      │
//!    └──complete(false), retries left (retry_count + 1)
//!                           │──complete(false), retries exhausted──▶ FAILED
//!                           └──fail()──▶ FAILED
//! ```
//!
//! Every store applies the outcome this module computes; an illegal transition is an
//! error value ([`TransitionError`]), never a silent change.

use std::fmt;
use std::str::FromStr;

/// Where a message stands in its box. The column value is the upper-case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MessageStatus {
    /// Stored, waiting for a worker (initial state; also after a failed attempt with retries left).
    Pending,
    /// Claimed by a worker that is publishing or handling it.
    Processing,
    /// Done (terminal).
    Completed,
    /// Gave up: retries exhausted or a permanent error (terminal; an operator may retry it).
    Failed,
}

/// An attempted transition that the life cycle does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal status transition: cannot {action} a message that is {from}")]
#[non_exhaustive]
pub struct TransitionError {
    from: MessageStatus,
    action: &'static str,
}

impl TransitionError {
    /// The status the message had.
    #[must_use]
    pub fn from(&self) -> MessageStatus {
        self.from
    }

    /// What was attempted (`process`, `complete`, `fail`, `resubmit`).
    #[must_use]
    pub fn action(&self) -> &'static str {
        self.action
    }
}

/// The status and retry count a message has after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AfterAttempt {
    /// The new status: COMPLETED, PENDING (will be retried) or FAILED.
    pub status: MessageStatus,
    /// The new retry count.
    pub retry_count: u32,
}

impl MessageStatus {
    /// The four statuses, in life-cycle order.
    pub const ALL: [MessageStatus; 4] = [
        MessageStatus::Pending,
        MessageStatus::Processing,
        MessageStatus::Completed,
        MessageStatus::Failed,
    ];

    /// The column value: `PENDING`, `PROCESSING`, `COMPLETED` or `FAILED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Pending => "PENDING",
            MessageStatus::Processing => "PROCESSING",
            MessageStatus::Completed => "COMPLETED",
            MessageStatus::Failed => "FAILED",
        }
    }

    /// Whether no worker will touch the message again on its own.
    pub const fn is_terminal(self) -> bool {
        matches!(self, MessageStatus::Completed | MessageStatus::Failed)
    }

    /// A worker takes the message: PENDING → PROCESSING.
    pub fn process(self) -> Result<MessageStatus, TransitionError> {
        match self {
            MessageStatus::Pending => Ok(MessageStatus::Processing),
            from => Err(TransitionError {
                from,
                action: "process",
            }),
        }
    }

    /// The outcome of an attempt on a PROCESSING message.
    ///
    /// Success → COMPLETED. Failure with `retry_count < max_retries` → PENDING with
    /// `retry_count + 1`. Failure with retries exhausted → FAILED.
    pub fn complete(
        self,
        success: bool,
        retry_count: u32,
        max_retries: u32,
    ) -> Result<AfterAttempt, TransitionError> {
        if self != MessageStatus::Processing {
            return Err(TransitionError {
                from: self,
                action: "complete",
            });
        }
        let after = if success {
            AfterAttempt {
                status: MessageStatus::Completed,
                retry_count,
            }
        } else if retry_count < max_retries {
            AfterAttempt {
                status: MessageStatus::Pending,
                retry_count: retry_count + 1,
            }
        } else {
            AfterAttempt {
                status: MessageStatus::Failed,
                retry_count,
            }
        };
        Ok(after)
    }

    /// A non-retriable failure: PROCESSING → FAILED without spending retries.
    pub fn fail(self) -> Result<MessageStatus, TransitionError> {
        match self {
            MessageStatus::Processing => Ok(MessageStatus::Failed),
            from => Err(TransitionError {
                from,
                action: "fail",
            }),
        }
    }

    /// An operator resubmits a FAILED message: FAILED → PENDING.
    pub fn resubmit(self) -> Result<MessageStatus, TransitionError> {
        match self {
            MessageStatus::Failed => Ok(MessageStatus::Pending),
            from => Err(TransitionError {
                from,
                action: "resubmit",
            }),
        }
    }
}

impl fmt::Display for MessageStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A column value that is not one of the four statuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown message status `{}`: expected PENDING, PROCESSING, COMPLETED or FAILED",
    crate::error::shown(.0)
)]
pub struct UnknownStatus(String);

impl UnknownStatus {
    /// The value that was not a status.
    #[must_use]
    pub fn value(&self) -> &str {
        &self.0
    }
}

impl FromStr for MessageStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MessageStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::MessageStatus::*;
    use super::*;

    #[test]
    fn string_form_round_trips() {
        for status in MessageStatus::ALL {
            assert_eq!(status.to_string().parse::<MessageStatus>(), Ok(status));
        }
        assert!("pending".parse::<MessageStatus>().is_err());
        assert!("".parse::<MessageStatus>().is_err());
    }

    #[test]
    fn only_pending_can_be_processed() {
        assert_eq!(Pending.process(), Ok(Processing));
        for from in [Processing, Completed, Failed] {
            assert_eq!(
                from.process(),
                Err(TransitionError {
                    from,
                    action: "process"
                })
            );
        }
    }

    #[test]
    fn success_completes() {
        let after = Processing.complete(true, 2, 3).unwrap();
        assert_eq!(
            after,
            AfterAttempt {
                status: Completed,
                retry_count: 2
            }
        );
    }

    #[test]
    fn failure_with_retries_left_goes_back_to_pending_with_one_more_retry() {
        assert_eq!(
            Processing.complete(false, 0, 3).unwrap(),
            AfterAttempt {
                status: Pending,
                retry_count: 1
            }
        );
        assert_eq!(
            Processing.complete(false, 2, 3).unwrap(),
            AfterAttempt {
                status: Pending,
                retry_count: 3
            }
        );
    }

    #[test]
    fn failure_with_retries_exhausted_fails() {
        assert_eq!(
            Processing.complete(false, 3, 3).unwrap(),
            AfterAttempt {
                status: Failed,
                retry_count: 3
            }
        );
        assert_eq!(
            Processing.complete(false, 0, 0).unwrap(),
            AfterAttempt {
                status: Failed,
                retry_count: 0
            }
        );
    }

    #[test]
    fn complete_is_illegal_outside_processing() {
        for from in [Pending, Completed, Failed] {
            for success in [true, false] {
                assert_eq!(
                    from.complete(success, 0, 3),
                    Err(TransitionError {
                        from,
                        action: "complete"
                    })
                );
            }
        }
    }

    #[test]
    fn fail_skips_retries_only_from_processing() {
        assert_eq!(Processing.fail(), Ok(Failed));
        for from in [Pending, Completed, Failed] {
            assert_eq!(
                from.fail(),
                Err(TransitionError {
                    from,
                    action: "fail"
                })
            );
        }
    }

    #[test]
    fn only_failed_can_be_resubmitted() {
        assert_eq!(Failed.resubmit(), Ok(Pending));
        for from in [Pending, Processing, Completed] {
            assert!(from.resubmit().is_err());
        }
    }

    #[test]
    fn terminal_statuses() {
        assert!(Completed.is_terminal() && Failed.is_terminal());
        assert!(!Pending.is_terminal() && !Processing.is_terminal());
    }

    #[test]
    fn illegal_transition_message_says_what_happened() {
        let err = Completed.process().unwrap_err();
        assert_eq!(
            err.to_string(),
            "illegal status transition: cannot process a message that is COMPLETED"
        );
    }
}
