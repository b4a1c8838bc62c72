//! Tier 4, stages: the five stages of a message's life — emission into the outbox,
//! dispatch to the transport, reception into the inbox, processing by the handlers, and
//! maintenance (retention, staleness, heartbeats). A stage runs on the engine and speaks
//! through the ports.

pub(crate) mod background;
pub(crate) mod dispatch;
pub mod emission;
pub(crate) mod maintenance;
pub mod processing;
pub mod reception;
pub mod sagas;
