//! Two services, two databases, Kafka between them (issue: Kafka and Redis, item 3): a
//! producer process emits 10,000 events and 1,000 commands, a consumer process handles
//! them; in the middle of the run every broker stops answering for 12 s, then answers
//! again. Every message is handled exactly once in effect; see `common::pair::run` for
//! every check.
//!
//! The brokers are librdkafka's mock cluster in a `kafka-mock` process of the test's own
//! (there is no Kafka server on this machine): real Kafka protocol on localhost ports,
//! spoken to by the services' real client; its outage is the brokers going down, as a
//! stopped server or a cut network is to its clients. The mock does not answer
//! `CreateTopics`, so the services run with `--kafka-create-topics false` and the mock
//! creates each topic, with 4 partitions, when its metadata is first asked for.

mod common;

use common::kafka_mock::{self, KafkaMock};
use common::pair::{self, Broker};

impl Broker for KafkaMock {
    fn transport(&self) -> &'static str {
        "kafka"
    }

    fn url(&self) -> String {
        self.servers().to_owned()
    }

    fn stop(&mut self) {
        self.down().expect("the mock's brokers go down");
    }

    fn start(&mut self) {
        self.up().expect("the mock's brokers come back");
    }

    fn extra_args(&self) -> Vec<String> {
        vec!["--kafka-create-topics".to_owned(), "false".to_owned()]
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_services_over_kafka_survive_a_broker_outage() {
    let mut cluster = kafka_mock::start();
    pair::run(&mut cluster).await;
}
