//! Tier 2, ports: the seams adapters and users plug into — the store and its capability
//! traits, the transport with its inbox sink and wire format, the handler traits, the
//! operators' admin surface and wake-ups. Ports import only the vocabulary.

pub mod admin;
pub mod handler;
pub(crate) mod sagas;
pub mod store;
pub mod transport;
pub mod wake;
