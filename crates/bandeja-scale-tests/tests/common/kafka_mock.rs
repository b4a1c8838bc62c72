//! The package's `kafka-mock` (librdkafka's mock cluster in a child process) for tests
//! whose services are processes of their own.

pub(crate) use bandeja_scale_tests::kafka_mock::KafkaMock;

/// Starts the `kafka-mock` built beside the tests; panics when it cannot.
pub(crate) fn start() -> KafkaMock {
    KafkaMock::start(env!("CARGO_BIN_EXE_kafka-mock").as_ref())
        .unwrap_or_else(|e| panic!("start kafka-mock: {e}"))
}
