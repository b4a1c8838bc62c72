//! The conformance suites of bandeja: the checks every store and every transport must pass,
//! run by the adapter crates' tests through one macro per suite.

pub mod admin;
pub mod completion;
pub mod runtime;
pub mod staleness;
pub mod store;
pub mod transport;
