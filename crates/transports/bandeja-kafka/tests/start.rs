//! What `connect` refuses, and why: a topic with another partition count than this
//! process's (on a mock cluster of the test's own, and on the suite's brokers, where the
//! first transport creates the topic: with `CreateTopics` on real brokers), brokers that
//! do not answer, options that cannot work.

mod common;

use std::time::{Duration, Instant};

use bandeja_core::record::MessageKind;
use bandeja_core::transport::TransportErrorKind;
use bandeja_kafka::{KafkaError, KafkaOptions, KafkaTransport};
use rdkafka::mocking::MockCluster;

use common::{bootstrap, namespace, options, PARTITIONS};

fn kafka_error(error: &bandeja_core::transport::TransportError) -> &KafkaError {
    std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<KafkaError>())
        .unwrap_or_else(|| panic!("a KafkaError inside {error:?}"))
}

/// `refused` is a rejection for a topic of `found` partitions in a process configured
/// with `configured`.
fn assert_partition_mismatch(
    refused: &bandeja_core::transport::TransportError,
    found: usize,
    configured: u16,
) {
    assert_eq!(refused.kind(), TransportErrorKind::Rejected);
    assert!(
        matches!(
            kafka_error(refused),
            KafkaError::PartitionMismatch { found: f, configured: c, .. }
                if *f == found && *c == configured
        ),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_with_another_partition_count_is_refused_naming_both() {
    common::logs();
    // A cluster of its own: the test creates the topic itself, with 3 partitions.
    let cluster = MockCluster::new(1).expect("a mock cluster");
    let prefix = namespace();
    cluster
        .create_topic(&format!("{prefix}.events"), 3, 1)
        .expect("create the events topic");
    // This cluster is a mock whatever the suite's brokers are: it creates no topic.
    let own_cluster = |prefix: &str| {
        options(prefix)
            .bootstrap_servers(cluster.bootstrap_servers())
            .create_topics(false)
            .broker_creates_topics(false)
    };
    let refused = KafkaTransport::connect(own_cluster(&prefix).partitions(4))
        .await
        .expect_err("another partition count");
    assert_partition_mismatch(&refused, 3, 4);
    let message = refused.to_string();
    assert!(
        message.contains("has 3 partitions") && message.contains("configured with 4"),
        "{message}"
    );
    let accepted = KafkaTransport::connect(own_cluster(&prefix).partitions(3))
        .await
        .expect("the topic's own count");
    assert_eq!(
        accepted.topic(MessageKind::Event, "x.Y"),
        format!("{prefix}.events")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_configured_with_another_partition_count_than_the_first_is_refused() {
    common::logs();
    let prefix = namespace();
    let first = KafkaTransport::connect(options(&prefix))
        .await
        .expect("the first process creates the events topic");
    let configured = PARTITIONS + 2;
    let refused = KafkaTransport::connect(options(&prefix).partitions(configured))
        .await
        .expect_err("another partition count than the topic's");
    assert_partition_mismatch(&refused, usize::from(PARTITIONS), configured);
    KafkaTransport::connect(options(&prefix))
        .await
        .expect("a second process with the first one's count");
    drop(first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_that_do_not_answer_are_unavailable_within_the_request_timeout() {
    common::logs();
    let started = Instant::now();
    let refused = KafkaTransport::connect(
        KafkaOptions::new("127.0.0.1:1").request_timeout(Duration::from_secs(2)),
    )
    .await
    .expect_err("nothing listens on port 1");
    assert_eq!(refused.kind(), TransportErrorKind::Unavailable);
    assert!(
        matches!(kafka_error(&refused), KafkaError::Unreachable { .. }),
        "{refused}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_that_cannot_work_are_refused_before_connecting() {
    let refused = KafkaTransport::connect(options("a prefix").bootstrap_servers(bootstrap()))
        .await
        .expect_err("a space in the prefix");
    assert_eq!(refused.kind(), TransportErrorKind::Rejected);
    assert!(refused.to_string().contains("`prefix`"), "{refused}");
    let reserved =
        KafkaTransport::connect(options(&namespace()).client_setting("enable.auto.commit", "true"))
            .await
            .expect_err("a setting the guarantees rest on");
    assert!(
        reserved.to_string().contains("enable.auto.commit"),
        "{reserved}"
    );
}
