//! The store conformance suite on PostgreSQL: each test gets its own schema (see `common`).

mod common;

use common::fresh_store;

bandeja_core::store_conformance_tests!(fresh_store);

mod runtime {
    use super::fresh_store;
    bandeja_core::runtime_conformance_tests!(fresh_store);
}
