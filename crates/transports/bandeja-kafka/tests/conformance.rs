//! The transport conformance suite on Kafka (librdkafka's mock cluster, see `common`),
//! each test in its own prefix, with a fresh SQLite store per service.

mod common;

use common::{fresh_store, kafka};

bandeja_conformance::transport_conformance_tests!(fresh_store, kafka);
