//! The completion conformance suite on PostgreSQL (completion modes, dedup after delete or
//! archive, retention, staleness): each test gets its own schema (see `common`).

mod common;

use common::fresh_store;

bandeja_conformance::completion_conformance_tests!(fresh_store);

/// The staleness suite: only a box that makes no progress has stale rows.
mod staleness {
    use super::fresh_store;
    bandeja_conformance::staleness_conformance_tests!(fresh_store);
}
