//! A Python service and a bandeja service over Kafka (librdkafka's mock cluster): the Python one publishes and consumes
//! CloudEvents with the CloudEvents SDK and the broker's own Python client
//! (`scripts/foreign-clients`, see `bandeja_conformance::foreign`).

mod common;

bandeja_conformance::foreign_clients_test!(
    common::fresh_store,
    common::kafka,
    "kafka",
    common::bootstrap(),
    |namespace: &str| namespace.to_owned()
);
