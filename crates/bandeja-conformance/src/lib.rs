//! The conformance suites of bandeja: the checks every store and every transport must pass,
//! and the fixtures the adapters' tests share. Not published: the adapter crates take it as
//! a dev-dependency (as sqlx keeps `sqlx-test` and tower keeps `tower-test`).
//!
//! Each suite is a module of checks, split by topic, and a macro that generates one
//! `#[tokio::test]` per check in the calling test crate:
//!
//! | suite | macro | what it needs |
//! |---|---|---|
//! | [`store`] | [`store_conformance_tests!`] | a fresh store per test |
//! | [`runtime`] | [`runtime_conformance_tests!`] | a fresh store per test |
//! | [`completion`] | [`completion_conformance_tests!`] | a fresh store per test |
//! | [`staleness`] | [`staleness_conformance_tests!`] | a fresh store per test |
//! | [`admin`] | [`admin_conformance_tests!`] | a fresh store and its archive reader |
//! | [`transport`] | [`transport_conformance_tests!`] | fresh stores and a transport per namespace |
//!
//! [`fixtures`] holds what the adapters' own tests share with the suites (the payloads,
//! [`fast_config`](fixtures::fast_config), a SQLite temp dir); [`standalone`] the checks an
//! adapter's test calls itself because they need what only the adapter has.
//!
//! The checks use bandeja-core's public API only: a check that needs more is a missing
//! public item in the core.

mod macros;

pub mod admin;
pub mod checks;
pub mod completion;
pub mod fixtures;
pub mod runtime;
pub mod staleness;
pub mod standalone;
pub mod store;
pub mod transport;
