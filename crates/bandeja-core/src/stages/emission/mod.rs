//! Stage 1, emission: messages enter the outbox through the caller's own transaction, so
//! they commit (or roll back) with the business change.
//!
//! Events are recorded on the aggregate ([`RecordedEvents`]) and drained into
//! `outbox_events` when the aggregate is saved; commands are sent by the use case through
//! [`Outbox::send`].

mod outbox;
mod recorded;

pub(crate) use outbox::explain_duplicate;
pub use outbox::Outbox;
pub use recorded::RecordedEvents;
