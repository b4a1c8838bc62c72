//! The completion conformance suite on PostgreSQL (completion modes, dedup after delete or
//! archive, retention, staleness): each test gets its own schema (see `common`).

mod common;

use common::fresh_store;

bandeja_core::completion_conformance_tests!(fresh_store);
