//! A Python service and a bandeja service over Kafka (librdkafka's mock cluster): the Python one publishes and
//! consumes CloudEvents with the CloudEvents SDK and the broker's own Python client
//! (`scripts/foreign-clients`, see `bandeja_conformance::foreign`).

mod common;

use std::any::Any;

use bandeja_conformance::foreign::python_clients_publish_and_consume;
use bandeja_conformance::transport::{Harness, StoreFuture, TransportFuture};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_client_publishes_events_handled_once_and_reads_what_bandeja_publishes() {
    let h = Harness::new(
        || -> StoreFuture<_> {
            Box::pin(async {
                let (store, guard) = common::fresh_store().await;
                (store, Box::new(guard) as Box<dyn Any + Send>)
            })
        },
        |namespace: String| -> TransportFuture { Box::pin(common::kafka(namespace)) },
    );
    let prefix = h.namespace().to_owned();
    python_clients_publish_and_consume(h, "kafka", &common::bootstrap(), &prefix).await;
}
