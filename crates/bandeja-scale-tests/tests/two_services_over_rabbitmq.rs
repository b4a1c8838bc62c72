//! Two services, two databases, RabbitMQ between them (issue: brokers, items 5 and 6): a
//! producer process emits 10,000 events and 1,000 commands, a consumer process handles
//! them; in the middle of the run the broker application is stopped for 12 s
//! (`rabbitmqctl stop_app`) and started again (`start_app`). Every message is handled
//! exactly once in effect; see `common::pair::run` for every check.
//!
//! This stops the machine's RabbitMQ (at `AMQP_URL`, default
//! `amqp://guest:guest@127.0.0.1:5672/%2f`) for everyone: it is the only test of its test
//! binary, and `cargo test` runs test binaries one after another, so no other RabbitMQ
//! test runs meanwhile.

mod common;

use std::process::Command;

use common::pair::{self, wait_for_port, Broker};

struct Rabbit;

fn rabbitmqctl(verb: &str) {
    let status = Command::new("rabbitmqctl")
        .arg(verb)
        .status()
        .unwrap_or_else(|e| panic!("run rabbitmqctl {verb}: {e}"));
    assert!(status.success(), "rabbitmqctl {verb}: {status}");
}

impl Broker for Rabbit {
    fn transport(&self) -> &'static str {
        "amqp"
    }

    fn url(&self) -> String {
        std::env::var("AMQP_URL")
            .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
    }

    fn stop(&mut self) {
        rabbitmqctl("stop_app");
        wait_for_port(5672, false);
    }

    fn start(&mut self) {
        rabbitmqctl("start_app");
        wait_for_port(5672, true);
    }
}

/// Starts the application again if the test fails while it is stopped.
struct Restart;

impl Drop for Restart {
    fn drop(&mut self) {
        let _ = Command::new("rabbitmqctl").arg("start_app").status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_services_over_rabbitmq_survive_a_broker_stop() {
    let _restart = Restart;
    pair::run(&mut Rabbit).await;
}
