//! Per-key order with three consuming processes of one service, one killed mid-run (issue
//! 18 item 8), on NATS JetStream, RabbitMQ, Redis Streams and Kafka:
//! 10,000 messages over 100 partition keys, `audit` runs of 5 ms; `a` is SIGKILLed once
//! half have arrived and it is running one. Each broker's own means keep a partition with
//! one owner at a time: NATS's shared consumer and its order check, RabbitMQ's single
//! active consumer, Redis's check of the group's
//! pending list (the killed process's entries taken over after 3 s), Kafka's group
//! assignment (the killed process's partitions handed over after its 6 s session). See
//! `common::shared` for the checks.
//!
//! NATS, RabbitMQ and Redis are the local servers (`NATS_URL`, `AMQP_URL`, `REDIS_URL`); Kafka is
//! librdkafka's mock cluster in a `kafka-mock` process of the test's own.

mod common;

use common::fleet::{amqp_url, nats_url, reach_amqp, reach_nats};
use common::kafka_mock;
use common::shared::{self, Kill, Plan};

fn plan<'a>(transport: &'a str, url: &'a str, prefix: &'a str) -> Plan<'a> {
    Plan {
        transport,
        url,
        prefix,
        messages: 10_000,
        keys: 100,
        handler_ms: 5,
        killed_handler_ms: 5,
        joiner_takes_part: transport != "amqp",
        kill: Kill::A,
    }
}

fn prefix() -> String {
    format!("order{:08x}", rand::random::<u32>())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_over_nats_one_killed_keep_each_key_in_order() {
    let url = nats_url();
    let prefix = prefix();
    let Some(streams) = reach_nats(&url, &prefix).await else {
        return;
    };
    shared::run(plan("nats", &url, &prefix)).await;
    drop(streams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_over_rabbitmq_one_killed_keep_each_key_in_order() {
    let url = amqp_url();
    let prefix = prefix();
    if reach_amqp(&url, &prefix).await.is_none() {
        return;
    }
    shared::run(plan("amqp", &url, &prefix)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_over_redis_one_killed_keep_each_key_in_order() {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    shared::run(plan("redis", &url, &prefix())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_over_kafka_one_killed_keep_each_key_in_order() {
    let cluster = kafka_mock::start();
    shared::run(plan("kafka", cluster.servers(), &prefix())).await;
}
