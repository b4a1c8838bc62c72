//! Shared by the PostgreSQL test crates: a fresh, migrated store in a schema of its own per
//! test (so tests run in parallel), dropped with the guard — the crate's `testing` module.
//!
//! Uses `DATABASE_URL`, or `postgres://postgres@127.0.0.1:5432/test`. When PostgreSQL is
//! unreachable the tests fail if `CI=true`, and are skipped otherwise.

// Each test crate uses a part of this module.
#![allow(dead_code)]

#[allow(unused_imports)] // not every test crate uses both
pub(crate) use bandeja_postgres::testing::{database_url, SchemaGuard};
use bandeja_postgres::PgStore;

/// A fresh, migrated store in a new schema `bandeja_t_<random hex>`, or `None` when
/// PostgreSQL is unreachable outside CI.
pub(crate) async fn try_fresh_store() -> Option<(PgStore, SchemaGuard)> {
    bandeja_postgres::testing::fresh_store("bandeja_t").await
}

/// [`try_fresh_store`] for the conformance macro, which cannot skip a test: when PostgreSQL
/// is unreachable outside CI the whole test binary ends successfully after a notice.
pub(crate) async fn fresh_store() -> (PgStore, SchemaGuard) {
    match try_fresh_store().await {
        Some(fresh) => fresh,
        None => std::process::exit(0),
    }
}
