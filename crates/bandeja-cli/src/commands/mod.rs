//! One module per command; each takes the store (any [`Admin`](bandeja_core::admin::Admin))
//! and its parsed arguments, and writes text or one JSON document on stdout. `schema`
//! takes files instead of a store.

pub(crate) mod change;
pub(crate) mod check;
pub(crate) mod discard;
pub(crate) mod list;
pub(crate) mod migrate;
pub(crate) mod replay;
pub(crate) mod retention;
pub(crate) mod retry;
pub(crate) mod sagas;
pub(crate) mod schema;
pub(crate) mod serve;
pub(crate) mod show;
pub(crate) mod status;
pub(crate) mod subscribers;
