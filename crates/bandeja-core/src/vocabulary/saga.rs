//! The words of orchestrated sagas: a saga's id, status and persisted state (one row per
//! running saga, updated in the transaction of the handler that received a step's reply),
//! its history, and the reply a step's service sends back.
//!
//! The engine that moves a saga along is [`sagas`](crate::sagas); this module only names
//! what it stores and sends.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::envelope::{MessageId, Payload};
use crate::tenant::TenantId;

/// A saga's id: a UUID v7 (ids sort by start time). It is also the correlation id of
/// every message of the saga.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SagaId(pub Uuid);

impl SagaId {
    /// A fresh id.
    #[must_use]
    pub fn new() -> SagaId {
        SagaId(Uuid::now_v7())
    }
}

impl Default for SagaId {
    fn default() -> Self {
        SagaId::new()
    }
}

impl fmt::Display for SagaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for SagaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SagaId({})", self.0)
    }
}

impl FromStr for SagaId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(SagaId)
    }
}

/// Where a saga is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SagaStatus {
    /// Going forward: a step's command is out, its reply awaited.
    Running,
    /// A step failed (or timed out) before the pivot: the completed steps' compensations
    /// run, last first.
    Compensating,
    /// Every step succeeded.
    Completed,
    /// A step failed and every completed step was compensated (recorded, not erased).
    Compensated,
    /// Needs an operator: a compensation kept failing, or a step after the pivot used up
    /// its retries.
    Failed,
}

impl SagaStatus {
    /// Every status, in the order above.
    pub const ALL: [SagaStatus; 5] = [
        SagaStatus::Running,
        SagaStatus::Compensating,
        SagaStatus::Completed,
        SagaStatus::Compensated,
        SagaStatus::Failed,
    ];

    /// The name stored in the `status` column.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            SagaStatus::Running => "RUNNING",
            SagaStatus::Compensating => "COMPENSATING",
            SagaStatus::Completed => "COMPLETED",
            SagaStatus::Compensated => "COMPENSATED",
            SagaStatus::Failed => "FAILED",
        }
    }

    /// Whether the saga has stopped moving (completed, compensated or failed).
    #[must_use]
    pub const fn is_final(self) -> bool {
        matches!(
            self,
            SagaStatus::Completed | SagaStatus::Compensated | SagaStatus::Failed
        )
    }
}

impl fmt::Display for SagaStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status name that is none of [`SagaStatus::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown saga status `{0}`: use running, compensating, completed, compensated or failed")]
pub struct UnknownSagaStatus(pub String);

impl FromStr for SagaStatus {
    type Err = UnknownSagaStatus;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SagaStatus::ALL
            .into_iter()
            .find(|status| status.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownSagaStatus(s.to_owned()))
    }
}

/// Which way a step's command goes: the step itself, or its compensation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SagaPhase {
    /// The step's own command.
    Forward,
    /// The step's compensation.
    Compensation,
}

/// What happened to a saga, one entry of its history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SagaEventKind {
    /// The saga was started.
    Started,
    /// A step's command (or a compensation's) was sent.
    Sent,
    /// A step (or compensation) replied success.
    Succeeded,
    /// A step (or compensation) replied failure.
    Failed,
    /// No reply came before the step's deadline.
    TimedOut,
    /// A reply that is not the one awaited (late, or for an earlier attempt): recorded
    /// and otherwise ignored.
    Ignored,
    /// The saga reached a final status.
    Finished,
}

/// One entry of a saga's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SagaEvent {
    /// When.
    pub at: DateTime<Utc>,
    /// What.
    pub kind: SagaEventKind,
    /// The step's name (empty for the saga as a whole).
    pub step: String,
    /// Forward or compensation.
    pub phase: SagaPhase,
    /// The attempt (1 for the first send of a step).
    pub attempt: u32,
    /// The message sent or replied to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<MessageId>,
    /// A reason (a failure's), or the final status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A saga's persisted state: one row per saga, written by the transaction that started it
/// and by each transaction that handled one of its replies or timeouts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SagaState {
    /// The saga's id (also the correlation id of its messages).
    pub id: SagaId,
    /// The definition's name (`Saga::define`).
    pub saga_type: String,
    /// Where it is.
    pub status: SagaStatus,
    /// The index of the step awaited (forward) or being compensated.
    pub step: u32,
    /// Forward or compensating.
    pub phase: SagaPhase,
    /// Sends of the current step or compensation so far (1 after the first).
    pub attempt: u32,
    /// The steps that succeeded, by index, in order.
    pub completed_steps: Vec<u32>,
    /// While compensating: the steps whose compensation is still to run, the next one
    /// last.
    #[serde(default)]
    pub to_compensate: Vec<u32>,
    /// Why the saga compensates or failed: the step's reason, or its timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The application's data (JSON), as the definition's type serializes it.
    pub data: serde_json::Value,
    /// The tenant the saga runs for (its commands' source tenant).
    pub tenant_id: TenantId,
    /// The service replies go to.
    pub reply_to: String,
    /// The id of the command whose reply is awaited (its latest send).
    pub awaiting: Option<MessageId>,
    /// Every send of the current step (or compensation) so far: a reply to an earlier
    /// one (a step slower than its timeout, sent again) counts as the step's answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent_attempts: Vec<MessageId>,
    /// When the awaited reply is late (a timeout), if the step has a time limit.
    pub deadline: Option<DateTime<Utc>>,
    /// What happened so far, oldest first.
    pub history: Vec<SagaEvent>,
    /// When it started.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// Bumped by every change: a store writes a change only over the version it read.
    pub version: i64,
}

impl SagaState {
    /// The correlation id of the saga's messages (its id).
    #[must_use]
    pub fn correlation_id(&self) -> String {
        self.id.to_string()
    }

    /// The name of the step the saga is at (awaited, compensated, or the last one it
    /// moved), as its history names it; empty before any step.
    #[must_use]
    pub fn current_step(&self) -> &str {
        self.history
            .iter()
            .rev()
            .find(|e| !e.step.is_empty())
            .map_or("", |e| e.step.as_str())
    }

    /// Whether a reply to `command` answers what the saga waits for: its latest send, or
    /// an earlier send of the same step (or compensation).
    #[must_use]
    pub fn awaits(&self, command: MessageId) -> bool {
        !self.status.is_final()
            && (self.awaiting == Some(command) || self.sent_attempts.contains(&command))
    }
}

/// Which sagas a listing returns, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SagaFilter {
    /// Only sagas of this definition.
    pub saga_type: Option<String>,
    /// Only sagas in this status.
    pub status: Option<SagaStatus>,
    /// At most this many (0: the default, 50).
    pub limit: usize,
}

impl SagaFilter {
    /// The limit a store applies: `limit`, 50 when unset, at most 10,000.
    #[must_use]
    pub fn effective_limit(&self) -> i64 {
        let limit = if self.limit == 0 { 50 } else { self.limit };
        i64::try_from(limit.min(10_000)).unwrap_or(50)
    }
}

/// The reply a step's service sends back to the saga's orchestrator (through its outbox,
/// in the transaction of the handler that did the step): whether the step succeeded, and
/// data for the saga. Sent with
/// [`HandlerContext::reply_to_saga`](crate::HandlerContext::reply_to_saga).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SagaReply {
    /// The saga.
    pub saga_id: SagaId,
    /// The command this answers.
    pub in_reply_to: MessageId,
    /// Whether the step (or compensation) was done.
    pub ok: bool,
    /// Why not, when it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Data for the saga (what the step produced, e.g. a charge id).
    #[serde(default)]
    pub data: serde_json::Value,
}

impl Payload for SagaReply {
    const TYPE: &'static str = "bandeja.saga.Reply";
}

/// What a step's service answers a saga with
/// ([`HandlerContext::reply_to_saga`](crate::HandlerContext::reply_to_saga)).
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// The step (or compensation) was done; the value is data for the saga
    /// ([`SagaBuilder::on_success`](crate::sagas::SagaBuilder::on_success) keeps it).
    Done(serde_json::Value),
    /// The step was refused for a business reason (out of stock, card declined): before
    /// the pivot, the saga compensates the steps done so far.
    Refused(String),
}

impl StepOutcome {
    /// Done, with no data.
    #[must_use]
    pub fn done() -> StepOutcome {
        StepOutcome::Done(serde_json::Value::Null)
    }

    /// Done, with `data` for the saga.
    pub fn done_with(data: &impl Serialize) -> Result<StepOutcome, serde_json::Error> {
        serde_json::to_value(data).map(StepOutcome::Done)
    }

    /// Refused, saying why.
    pub fn refused(reason: impl Into<String>) -> StepOutcome {
        StepOutcome::Refused(reason.into())
    }
}

/// A saga used the wrong way: nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SagaError {
    /// `reply_to_saga` in a handler whose message is not a saga's step.
    #[error("the message being handled is not a saga step (it has no `{}` header): only a handler of a saga's command can reply to it", headers::SAGA_ID)]
    NotAStep,
    /// The saga's data did not serialize, or the stored data no longer decodes as the
    /// definition's type.
    #[error("the data of saga `{saga_type}` does not fit its type: {source}")]
    Data {
        /// The definition's name.
        saga_type: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The saga is not registered on the runtime that starts it.
    #[error("saga `{0}` is not registered on this runtime: register it with `BandejaBuilder::saga` before starting one")]
    NotRegistered(String),
}

/// The headers a saga's commands carry, read by
/// [`HandlerContext::reply_to_saga`](crate::HandlerContext::reply_to_saga).
pub mod headers {
    /// The saga's id.
    pub const SAGA_ID: &str = "bandeja-saga-id";
    /// The service to send the reply to.
    pub const REPLY_TO: &str = "bandeja-saga-reply-to";
    /// The step's name.
    pub const STEP: &str = "bandeja-saga-step";
    /// `<saga id>:<step>:<phase>`, the same for every send of one step (or compensation):
    /// the key a step's service deduplicates on.
    pub const IDEMPOTENCY_KEY: &str = "bandeja-saga-key";
    /// `forward` or `compensation`.
    pub const PHASE: &str = "bandeja-saga-phase";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_through_their_names_in_any_case() {
        for status in SagaStatus::ALL {
            assert_eq!(status.as_str().parse::<SagaStatus>(), Ok(status));
            assert_eq!(
                status.as_str().to_lowercase().parse::<SagaStatus>(),
                Ok(status)
            );
        }
        let e = "done".parse::<SagaStatus>().expect_err("not a status");
        assert!(e.to_string().contains("compensated"), "{e}");
    }

    #[test]
    fn a_state_round_trips_through_json() {
        let now = Utc::now();
        let state = SagaState {
            id: SagaId::new(),
            saga_type: "order".into(),
            status: SagaStatus::Compensating,
            step: 1,
            phase: SagaPhase::Compensation,
            attempt: 2,
            completed_steps: vec![0, 1],
            to_compensate: vec![0],
            reason: Some("out of stock".into()),
            data: serde_json::json!({"order": 7}),
            tenant_id: TenantId::default_tenant(),
            reply_to: "order".into(),
            awaiting: Some(MessageId::new()),
            sent_attempts: vec![MessageId::new()],
            deadline: Some(now),
            history: vec![SagaEvent {
                at: now,
                kind: SagaEventKind::TimedOut,
                step: "reserve".into(),
                phase: SagaPhase::Forward,
                attempt: 1,
                message_id: None,
                detail: None,
            }],
            created_at: now,
            updated_at: now,
            version: 3,
        };
        let json = serde_json::to_string(&state).expect("serialize");
        let back: SagaState = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, state);
    }
}
