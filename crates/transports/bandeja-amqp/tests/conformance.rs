//! The transport conformance suite of bandeja-core on RabbitMQ: each service of a test has
//! its own SQLite store; the services of a test share a prefix of their own.

mod common;

use common::{amqp, fresh_store};

bandeja_conformance::transport_conformance_tests!(fresh_store, amqp);
