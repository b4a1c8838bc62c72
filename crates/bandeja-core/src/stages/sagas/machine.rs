//! The saga's state machine, without I/O: given a saga's state, the shape of its
//! definition and what just happened (a reply, a timeout), it changes the state and says
//! which command to send next. The orchestrator builds and sends that command and writes
//! the state, in one transaction.
//!
//! The rules:
//!
//! - a step that succeeds moves the saga to the next step, or completes it;
//! - a step that fails (or times out) **before the pivot** starts the compensation of the
//!   steps that succeeded, last first (a step that timed out is compensated too, if it
//!   has a compensation: it may have been done); with none to compensate, the saga is
//!   COMPENSATED at once;
//! - a step that fails **after the pivot succeeded**, or a pivot that times out (it may
//!   have been done, and cannot be undone), is sent again, up to `max_retries` more times,
//!   then the saga is FAILED for an operator — never compensated;
//! - a compensation that fails or times out is sent again the same way, then FAILED;
//! - a reply that is not the one awaited (late, or for an earlier attempt) is recorded and
//!   changes nothing else.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::envelope::MessageId;
use crate::saga::{SagaEvent, SagaEventKind, SagaPhase, SagaState, SagaStatus};

/// What the machine needs to know of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepShape {
    /// The step's name.
    pub(crate) name: String,
    /// Whether it has a compensation.
    pub(crate) compensable: bool,
    /// Whether it is the pivot.
    pub(crate) pivot: bool,
    /// How long its reply may take.
    pub(crate) timeout: Option<Duration>,
    /// How long its compensation's reply may take.
    pub(crate) compensation_timeout: Option<Duration>,
}

/// What happened to the saga.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Input<'a> {
    /// A reply to `in_reply_to`.
    Reply {
        in_reply_to: MessageId,
        message_id: MessageId,
        ok: bool,
        reason: Option<&'a str>,
    },
    /// The awaited reply's deadline passed.
    Timeout,
}

/// The command to send next, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Send step `step`'s command (forward) or its compensation.
    Send { step: u32, phase: SagaPhase },
    /// Nothing to send (the saga finished, or the input changed nothing).
    Nothing,
}

/// The first command of a new saga.
pub(crate) fn start(state: &mut SagaState, steps: &[StepShape], now: DateTime<Utc>) -> Next {
    state.status = SagaStatus::Running;
    state.step = 0;
    state.phase = SagaPhase::Forward;
    state.attempt = 0;
    note(state, steps, now, SagaEventKind::Started, None, None);
    Next::Send {
        step: 0,
        phase: SagaPhase::Forward,
    }
}

/// Moves `state` on `input`; returns what to send.
pub(crate) fn advance(
    state: &mut SagaState,
    steps: &[StepShape],
    max_retries: u32,
    input: Input<'_>,
    now: DateTime<Utc>,
) -> Next {
    let (ok, reason, timed_out) = match input {
        Input::Reply {
            in_reply_to,
            message_id,
            ok,
            reason,
        } => {
            if !state.awaits(in_reply_to) {
                let detail = format!(
                    "a reply to {in_reply_to} while {}",
                    match state.awaiting {
                        Some(awaited) if !state.status.is_final() => format!("awaiting {awaited}"),
                        _ => format!("{}", state.status),
                    }
                );
                note(
                    state,
                    steps,
                    now,
                    SagaEventKind::Ignored,
                    Some(message_id),
                    Some(detail),
                );
                answered_send(state, in_reply_to);
                return Next::Nothing;
            }
            let kind = if ok {
                SagaEventKind::Succeeded
            } else {
                SagaEventKind::Failed
            };
            note(
                state,
                steps,
                now,
                kind,
                Some(message_id),
                reason.map(str::to_owned),
            );
            (ok, reason.map(str::to_owned), false)
        }
        Input::Timeout => {
            if state.status.is_final() || state.awaiting.is_none() {
                return Next::Nothing;
            }
            let limit = steps
                .get(index(state.step))
                .and_then(|s| s.timeout)
                .map_or_else(String::new, |t| format!(" within {t:?}"));
            let detail = format!("no reply{limit}");
            note(
                state,
                steps,
                now,
                SagaEventKind::TimedOut,
                None,
                Some(detail.clone()),
            );
            (false, Some(detail), true)
        }
    };
    state.awaiting = None;
    state.deadline = None;
    let step = state.step;
    match (state.phase, ok) {
        (SagaPhase::Forward, true) => {
            state.completed_steps.push(step);
            if index(step) + 1 < steps.len() {
                state.step = step + 1;
                state.attempt = 0;
                Next::Send {
                    step: step + 1,
                    phase: SagaPhase::Forward,
                }
            } else {
                finish(state, steps, now, SagaStatus::Completed)
            }
        }
        (SagaPhase::Forward, false) => {
            let shape = steps.get(index(step));
            let past_pivot = state
                .completed_steps
                .iter()
                .any(|s| steps.get(index(*s)).is_some_and(|s| s.pivot));
            let pivot_in_doubt = timed_out && shape.is_some_and(|s| s.pivot);
            if past_pivot || pivot_in_doubt {
                return again(state, steps, max_retries, reason, now);
            }
            state.reason = reason.map(|r| format!("step `{}`: {r}", name(steps, step)));
            state.status = SagaStatus::Compensating;
            state.phase = SagaPhase::Compensation;
            state.to_compensate = state
                .completed_steps
                .iter()
                .copied()
                .filter(|s| compensable(steps, *s))
                .collect();
            if timed_out && compensable(steps, step) {
                state.to_compensate.push(step);
            }
            next_compensation(state, steps, now)
        }
        (SagaPhase::Compensation, true) => next_compensation(state, steps, now),
        (SagaPhase::Compensation, false) => again(state, steps, max_retries, reason, now),
    }
}

/// Sends the current step (or compensation) again, or fails the saga once it has been
/// sent `1 + max_retries` times.
fn again(
    state: &mut SagaState,
    steps: &[StepShape],
    max_retries: u32,
    reason: Option<String>,
    now: DateTime<Utc>,
) -> Next {
    if state.attempt > max_retries {
        let what = match state.phase {
            SagaPhase::Forward => "step",
            SagaPhase::Compensation => "compensation of step",
        };
        state.reason = Some(format!(
            "{what} `{}` failed {} times: {}",
            name(steps, state.step),
            state.attempt,
            reason.as_deref().unwrap_or("no reason given")
        ));
        return finish(state, steps, now, SagaStatus::Failed);
    }
    Next::Send {
        step: state.step,
        phase: state.phase,
    }
}

/// The next compensation to run, last completed step first; COMPENSATED when none is
/// left.
fn next_compensation(state: &mut SagaState, steps: &[StepShape], now: DateTime<Utc>) -> Next {
    match state.to_compensate.pop() {
        Some(step) => {
            state.step = step;
            state.attempt = 0;
            Next::Send {
                step,
                phase: SagaPhase::Compensation,
            }
        }
        None => finish(state, steps, now, SagaStatus::Compensated),
    }
}

fn finish(
    state: &mut SagaState,
    steps: &[StepShape],
    now: DateTime<Utc>,
    status: SagaStatus,
) -> Next {
    state.status = status;
    state.awaiting = None;
    state.deadline = None;
    let detail = match (&state.reason, status) {
        (Some(reason), SagaStatus::Compensated | SagaStatus::Failed) => {
            format!("{status}: {reason}")
        }
        _ => status.to_string(),
    };
    note(
        state,
        steps,
        now,
        SagaEventKind::Finished,
        None,
        Some(detail),
    );
    Next::Nothing
}

/// Ends the saga FAILED for an operator: its next command could not be built or sent
/// (`why`), which retrying would not change.
pub(crate) fn fail(state: &mut SagaState, steps: &[StepShape], now: DateTime<Utc>, why: String) {
    state.reason = Some(why);
    finish(state, steps, now, SagaStatus::Failed);
}

/// Records that the command of `step`/`phase` was sent as `message_id`, with its deadline.
pub(crate) fn sent(
    state: &mut SagaState,
    steps: &[StepShape],
    message_id: MessageId,
    now: DateTime<Utc>,
) {
    if state.attempt == 0 {
        state.sent_attempts.clear();
    }
    state.attempt += 1;
    state.awaiting = Some(message_id);
    state.sent_attempts.push(message_id);
    let shape = steps.get(index(state.step));
    let limit = match state.phase {
        SagaPhase::Forward => shape.and_then(|s| s.timeout),
        SagaPhase::Compensation => shape.and_then(|s| s.compensation_timeout),
    };
    state.deadline = limit
        .and_then(|t| chrono::Duration::from_std(t).ok())
        .and_then(|t| now.checked_add_signed(t));
    note(
        state,
        steps,
        now,
        SagaEventKind::Sent,
        Some(message_id),
        None,
    );
}

fn compensable(steps: &[StepShape], step: u32) -> bool {
    steps.get(index(step)).is_some_and(|s| s.compensable)
}

fn name(steps: &[StepShape], step: u32) -> &str {
    steps.get(index(step)).map_or("?", |s| s.name.as_str())
}

fn index(step: u32) -> usize {
    usize::try_from(step).unwrap_or(usize::MAX)
}

/// Makes the history's last entry (an ignored reply) name the step, phase and attempt of
/// the command it answers, when the history has that command's send (a late reply to an
/// earlier step is about that step, not about the one the saga is at now).
fn answered_send(state: &mut SagaState, in_reply_to: MessageId) {
    let sent = state
        .history
        .iter()
        .rev()
        .find(|e| e.kind == SagaEventKind::Sent && e.message_id == Some(in_reply_to))
        .map(|e| (e.step.clone(), e.phase, e.attempt));
    if let (Some((step, phase, attempt)), Some(last)) = (sent, state.history.last_mut()) {
        last.step = step;
        last.phase = phase;
        last.attempt = attempt;
    }
}

fn note(
    state: &mut SagaState,
    steps: &[StepShape],
    now: DateTime<Utc>,
    kind: SagaEventKind,
    message_id: Option<MessageId>,
    detail: Option<String>,
) {
    let step = if matches!(kind, SagaEventKind::Started | SagaEventKind::Finished) {
        String::new()
    } else {
        name(steps, state.step).to_owned()
    };
    state.history.push(SagaEvent {
        at: now,
        kind,
        step,
        phase: state.phase,
        attempt: state.attempt,
        message_id,
        detail,
    });
    state.updated_at = now;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::saga::SagaId;
    use crate::tenant::TenantId;

    fn shape(name: &str, compensable: bool, pivot: bool) -> StepShape {
        StepShape {
            name: name.into(),
            compensable,
            pivot,
            timeout: Some(Duration::from_secs(30)),
            compensation_timeout: Some(Duration::from_secs(30)),
        }
    }

    /// charge (compensable) → reserve (compensable) → ship (pivot) → notify.
    fn order_steps() -> Vec<StepShape> {
        vec![
            shape("charge", true, false),
            shape("reserve", true, false),
            shape("ship", false, true),
            shape("notify", false, false),
        ]
    }

    fn fresh() -> SagaState {
        let now = Utc::now();
        SagaState {
            id: SagaId::new(),
            saga_type: "order".into(),
            status: SagaStatus::Running,
            step: 0,
            phase: SagaPhase::Forward,
            attempt: 0,
            completed_steps: Vec::new(),
            to_compensate: Vec::new(),
            reason: None,
            data: serde_json::Value::Null,
            tenant_id: TenantId::default_tenant(),
            reply_to: "order".into(),
            awaiting: None,
            sent_attempts: Vec::new(),
            deadline: None,
            history: Vec::new(),
            created_at: now,
            updated_at: now,
            version: 0,
        }
    }

    /// Drives a saga: sends what the machine asks for, answers with `replies` in order
    /// (`Some(true)` success, `Some(false)` failure, `None` a timeout), and returns what
    /// was sent, as (step, phase).
    fn drive(steps: &[StepShape], replies: &[Option<bool>]) -> (SagaState, Vec<(u32, SagaPhase)>) {
        let mut state = fresh();
        let now = Utc::now();
        let mut sent_log = Vec::new();
        let mut next = start(&mut state, steps, now);
        let mut replies = replies.iter();
        while let Next::Send { step, phase } = next {
            sent_log.push((step, phase));
            let id = MessageId::new();
            sent(&mut state, steps, id, now);
            let Some(reply) = replies.next() else { break };
            let input = match reply {
                Some(ok) => Input::Reply {
                    in_reply_to: id,
                    message_id: MessageId::new(),
                    ok: *ok,
                    reason: (!ok).then_some("refused"),
                },
                None => Input::Timeout,
            };
            next = advance(&mut state, steps, 2, input, now);
        }
        (state, sent_log)
    }

    use SagaPhase::{Compensation as C, Forward as F};

    #[test]
    fn every_step_succeeding_completes_the_saga_in_order() {
        let (state, sent) = drive(&order_steps(), &[Some(true); 4]);
        assert_eq!(state.status, SagaStatus::Completed);
        assert_eq!(sent, [(0, F), (1, F), (2, F), (3, F)]);
        assert_eq!(state.completed_steps, [0, 1, 2, 3]);
        assert!(state.awaiting.is_none() && state.deadline.is_none());
    }

    #[test]
    fn a_failure_before_the_pivot_compensates_the_completed_steps_last_first() {
        // charge ok, reserve ok, ship refused: compensate reserve, then charge.
        let (state, sent) = drive(
            &order_steps(),
            &[Some(true), Some(true), Some(false), Some(true), Some(true)],
        );
        assert_eq!(sent, [(0, F), (1, F), (2, F), (1, C), (0, C)]);
        assert_eq!(state.status, SagaStatus::Compensated);
        assert!(
            state.reason.as_deref().is_some_and(|r| r.contains("ship")),
            "{:?}",
            state.reason
        );
    }

    #[test]
    fn a_failing_first_step_has_nothing_to_compensate() {
        let (state, sent) = drive(&order_steps(), &[Some(false)]);
        assert_eq!(sent, [(0, F)]);
        assert_eq!(state.status, SagaStatus::Compensated);
    }

    #[test]
    fn a_step_that_times_out_before_the_pivot_is_compensated_too() {
        // charge ok, reserve times out: reserve may have happened, undo it, then charge.
        let (state, sent) = drive(&order_steps(), &[Some(true), None, Some(true), Some(true)]);
        assert_eq!(sent, [(0, F), (1, F), (1, C), (0, C)]);
        assert_eq!(state.status, SagaStatus::Compensated);
    }

    #[test]
    fn after_the_pivot_a_failing_step_is_retried_never_compensated() {
        // ship ok (pivot), notify fails twice then succeeds.
        let replies = [
            Some(true),
            Some(true),
            Some(true),
            Some(false),
            None,
            Some(true),
        ];
        let (state, sent) = drive(&order_steps(), &replies);
        assert_eq!(sent, [(0, F), (1, F), (2, F), (3, F), (3, F), (3, F)]);
        assert_eq!(state.status, SagaStatus::Completed);
    }

    #[test]
    fn after_the_pivot_retries_run_out_into_failed_for_an_operator() {
        let replies = [
            Some(true),
            Some(true),
            Some(true),
            Some(false),
            Some(false),
            Some(false),
        ];
        let (state, sent) = drive(&order_steps(), &replies);
        assert_eq!(
            sent.iter().filter(|s| **s == (3, F)).count(),
            3,
            "1 + 2 retries"
        );
        assert_eq!(state.status, SagaStatus::Failed);
        assert!(!sent.iter().any(|(_, p)| *p == C), "never compensated");
    }

    #[test]
    fn a_pivot_that_times_out_is_sent_again_not_compensated() {
        let (state, sent) = drive(
            &order_steps(),
            &[Some(true), Some(true), None, Some(true), Some(true)],
        );
        assert_eq!(sent, [(0, F), (1, F), (2, F), (2, F), (3, F)]);
        assert_eq!(state.status, SagaStatus::Completed);
    }

    #[test]
    fn a_compensation_that_keeps_failing_ends_failed() {
        let replies = [
            Some(true),
            Some(false),
            Some(false),
            Some(false),
            Some(false),
        ];
        let (state, sent) = drive(&order_steps(), &replies);
        assert_eq!(sent, [(0, F), (1, F), (0, C), (0, C), (0, C)]);
        assert_eq!(state.status, SagaStatus::Failed);
    }

    #[test]
    fn a_late_reply_to_an_earlier_step_is_recorded_under_that_step() {
        let steps = order_steps();
        let mut state = fresh();
        let now = Utc::now();
        start(&mut state, &steps, now);
        let charge = MessageId::new();
        sent(&mut state, &steps, charge, now);
        let reply = |in_reply_to| Input::Reply {
            in_reply_to,
            message_id: MessageId::new(),
            ok: true,
            reason: None,
        };
        assert!(matches!(
            advance(&mut state, &steps, 2, reply(charge), now),
            Next::Send { step: 1, .. }
        ));
        sent(&mut state, &steps, MessageId::new(), now);
        // The charge's service answers its command a second time (a redelivery).
        assert_eq!(
            advance(&mut state, &steps, 2, reply(charge), now),
            Next::Nothing
        );
        let ignored = state.history.last().expect("an entry");
        assert_eq!(ignored.kind, SagaEventKind::Ignored);
        assert_eq!(
            (ignored.step.as_str(), ignored.phase, ignored.attempt),
            ("charge", SagaPhase::Forward, 1),
            "the entry names the step the reply answers, not the awaited one"
        );
        assert_eq!(state.step, 1, "still awaiting the reservation");
    }

    #[test]
    fn a_reply_that_is_not_awaited_is_recorded_and_changes_nothing() {
        let steps = order_steps();
        let mut state = fresh();
        let now = Utc::now();
        start(&mut state, &steps, now);
        let first = MessageId::new();
        sent(&mut state, &steps, first, now);
        let late = Input::Reply {
            in_reply_to: MessageId::new(),
            message_id: MessageId::new(),
            ok: true,
            reason: None,
        };
        assert_eq!(advance(&mut state, &steps, 2, late, now), Next::Nothing);
        assert_eq!(state.awaiting, Some(first));
        assert_eq!(state.step, 0);
        assert_eq!(
            state.history.last().map(|e| e.kind),
            Some(SagaEventKind::Ignored)
        );
        // And a timeout of a finished saga does nothing at all.
        let (mut done, _) = drive(&steps, &[Some(true); 4]);
        let before = done.history.len();
        assert_eq!(
            advance(&mut done, &steps, 2, Input::Timeout, now),
            Next::Nothing
        );
        assert_eq!(done.history.len(), before);
    }

    #[test]
    fn a_reply_to_an_earlier_send_of_the_step_counts_after_a_resend() {
        // ship (the pivot) times out and is sent again; the first send's reply comes late.
        let steps = order_steps();
        let (mut state, _) = drive(&steps, &[Some(true), Some(true)]);
        let now = Utc::now();
        let first = state.awaiting.expect("ship sent");
        assert_eq!(
            advance(&mut state, &steps, 2, Input::Timeout, now),
            Next::Send { step: 2, phase: F }
        );
        sent(&mut state, &steps, MessageId::new(), now);
        let late = Input::Reply {
            in_reply_to: first,
            message_id: MessageId::new(),
            ok: true,
            reason: None,
        };
        assert_eq!(
            advance(&mut state, &steps, 2, late, now),
            Next::Send { step: 3, phase: F },
            "the first send's success moves the saga on"
        );
        // The second send's reply, once notify was sent, is a stale one.
        let notify = MessageId::new();
        sent(&mut state, &steps, notify, now);
        assert_eq!(
            state.sent_attempts,
            [notify],
            "a new step forgets the old sends"
        );
    }

    #[test]
    fn the_history_names_the_steps() {
        let steps = order_steps();
        let (state, _) = drive(&steps, &[Some(true), Some(false), Some(true)]);
        let named: Vec<(&str, SagaEventKind)> = state
            .history
            .iter()
            .map(|e| (e.step.as_str(), e.kind))
            .collect();
        assert_eq!(
            named,
            [
                ("", SagaEventKind::Started),
                ("charge", SagaEventKind::Sent),
                ("charge", SagaEventKind::Succeeded),
                ("reserve", SagaEventKind::Sent),
                ("reserve", SagaEventKind::Failed),
                ("charge", SagaEventKind::Sent),
                ("charge", SagaEventKind::Succeeded),
                ("", SagaEventKind::Finished),
            ]
        );
    }
}
