//! Tier 3, engine: what every stage's worker shares — the shared context of a running
//! process, the registry of subscribers, claiming, the end of an attempt, leases, the
//! worker loop and its lanes (pace, conflicts, stragglers, time limits), crash points and
//! telemetry. The engine imports the vocabulary and the ports, never a stage.

pub(crate) mod attempt;
pub(crate) mod claim;
pub(crate) mod conflicts;
pub(crate) mod context;
pub mod fault;
pub(crate) mod lease;
pub(crate) mod pace;
pub(crate) mod registry;
pub(crate) mod stragglers;
pub mod telemetry;
pub(crate) mod timeouts;
pub(crate) mod transitions;
pub(crate) mod worker;
