//! The transport conformance suite on NATS JetStream (the server at 127.0.0.1:4222), each
//! test in its own prefix, with a fresh SQLite store per service.

mod common;

use common::{fresh_store, guarded as nats};

bandeja_conformance::transport_conformance_tests!(fresh_store, nats);
