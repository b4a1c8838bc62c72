//! Tier 1, vocabulary: the words every other tier speaks — messages and their envelope,
//! statuses, tenants, stored records, errors, configuration, name rules and subscriptions.
//! Nothing here imports from a higher tier (`ports`, `engine`, `stages`, `assembly`); the
//! test `tests/tiers.rs` checks it.

pub mod config;
pub mod envelope;
pub mod error;
pub mod names;
pub mod record;
pub mod saga;
#[cfg(feature = "schema")]
pub mod schema;
pub mod status;
pub mod subscriptions;
pub mod tenant;
#[cfg(test)]
pub(crate) mod test_log;
pub mod upcast;
