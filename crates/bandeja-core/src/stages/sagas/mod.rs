//! Orchestrated sagas (seed 004, "Flujos largos"): a flow of several steps in several
//! services, each step a command sent through the outbox and answered through the inbox,
//! each with a compensation that undoes it; a failing step before the **pivot** runs the
//! compensations of the completed steps, last first; after the pivot, failing steps are
//! retried until they succeed or the saga is FAILED for an operator. The saga's state is
//! a row of the store ([`SagaStore`]), moved in the transaction of the handler that
//! received a reply, so a crash anywhere resumes it and never runs a step or a
//! compensation twice.
//!
//! - define a saga with [`Saga::define`], register it with
//!   [`BandejaBuilder::saga`](crate::BandejaBuilder::saga), start one with
//!   [`Bandeja::start_saga`](crate::Bandeja::start_saga) in your transaction;
//! - a step's service handles the step's command like any command and answers with
//!   [`HandlerContext::reply_to_saga`](crate::HandlerContext::reply_to_saga) (a business
//!   refusal is a reply too: `StepOutcome::refused`; an error is retried as usual, and a
//!   step that never replies times out);
//! - the state is visible with [`SagaStore::list_sagas`] and [`SagaStore::saga`]
//!   (`bandeja sagas list` / `show`).

mod definition;
pub(crate) mod machine;
pub(crate) mod orchestrator;

pub use crate::ports::sagas::SagaStore;
pub use definition::{
    Saga, SagaBuilder, DEFAULT_MAX_RETRIES, DEFAULT_STEP_TIMEOUT, MAX_STEP_TIMEOUT,
};
pub use orchestrator::{LATE_SAGAS_EVERY, REPLY_SUBSCRIBER};
