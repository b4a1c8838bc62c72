//! The shop as five services over Kafka (see `common::services`): librdkafka's mock
//! cluster, started in this test's process on localhost ports (there is no Kafka server
//! on this machine), which the five shop processes reach with the real client. The mock
//! creates each topic when its metadata is first asked for (it does not answer
//! `CreateTopics`), so the services run with `--kafka-create-topics false` and its
//! partition count, 4.

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_order_saga_runs_across_five_services_over_kafka() {
    let (sender, receiver) = std::sync::mpsc::channel();
    // The cluster lives on a thread of its own for the rest of the test binary.
    std::thread::spawn(move || {
        let cluster = rdkafka::mocking::MockCluster::new(1).expect("start the mock cluster");
        let _ = sender.send(cluster.bootstrap_servers());
        loop {
            std::thread::park();
        }
    });
    let servers = receiver.recv().expect("the mock cluster's address");
    common::services::run(&[
        ("SHOP_KAFKA_SERVERS", servers),
        ("SHOP_KAFKA_CREATE_TOPICS", "false".to_owned()),
        // The partition count of the topics the mock creates.
        ("SHOP_BROKER_PARTITIONS", "4".to_owned()),
    ])
    .await;
}
