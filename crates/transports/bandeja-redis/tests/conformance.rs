//! The transport conformance suite of bandeja-core on Redis Streams: each service of a
//! test has its own SQLite store; the services of a test share a key prefix of their own,
//! whose keys are deleted when the test ends.

mod common;

use common::{fresh_store, redis};

bandeja_conformance::transport_conformance_tests!(fresh_store, redis);
