//! Stage 2, dispatch: the outbox worker claims due outbox rows and hands them to the
//! transport (in-process: straight into the inbox), then writes the outcomes back.
//!
//! With a broker, a publish starts only within the claimed rows' lease and waits for the
//! broker no longer than the lease allows ([`lease`]); what the transport reports is
//! checked before any row is marked ([`publish`]).

mod lease;
mod publish;
pub(crate) mod worker;
