//! The run's own processes beside the workers: the broker an outage takes away and brings
//! back ([`OwnBroker`]), and where the `scale-worker` and `kafka-mock` executables are.

use std::path::PathBuf;

use super::Plan;
use crate::kafka_mock::KafkaMock;
use crate::nats_server::NatsServer;
use crate::redis_server::RedisServer;

/// A broker process of the run's own, which an outage kills and starts again (the Kafka
/// mock: whose brokers an outage takes down and brings back).
pub(crate) enum OwnBroker {
    Nats(NatsServer),
    Redis(RedisServer),
    KafkaMock(KafkaMock),
}

impl OwnBroker {
    pub(crate) fn url(&self) -> String {
        match self {
            OwnBroker::Nats(server) => server.url(),
            OwnBroker::Redis(server) => server.url(),
            OwnBroker::KafkaMock(cluster) => cluster.servers().to_owned(),
        }
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            OwnBroker::Nats(_) => "nats-server",
            OwnBroker::Redis(_) => "redis-server",
            OwnBroker::KafkaMock(_) => "kafka-mock",
        }
    }

    /// What an outage does to it.
    pub(crate) fn outage(&self) -> &'static str {
        match self {
            OwnBroker::Nats(_) | OwnBroker::Redis(_) => "SIGKILLed, started again",
            OwnBroker::KafkaMock(_) => "every broker down, up again",
        }
    }

    /// SIGKILL (the mock: every broker down); returns once its port is closed.
    pub(crate) fn kill(&mut self) -> Result<(), String> {
        match self {
            OwnBroker::Nats(server) => server.stop(false),
            OwnBroker::Redis(server) => server.kill(),
            OwnBroker::KafkaMock(cluster) => cluster.down(),
        }
    }

    /// Starts it again on the same port and store (the mock: brings its brokers up, its
    /// topics and groups kept); returns once it accepts connections.
    pub(crate) fn resume(&mut self) -> Result<(), String> {
        match self {
            OwnBroker::Nats(server) => server.resume(),
            OwnBroker::Redis(server) => server.resume(),
            OwnBroker::KafkaMock(cluster) => cluster.up(),
        }
    }
}

/// The `scale-worker` executable: `--worker-bin`, or the one beside this executable.
pub(super) fn worker_bin(plan: &Plan) -> Result<PathBuf, String> {
    if let Some(bin) = &plan.worker_bin {
        return Ok(bin.clone());
    }
    let me = std::env::current_exe().map_err(|e| format!("where am I? {e}"))?;
    let mut dir = me
        .parent()
        .ok_or("this executable has no directory")?
        .to_path_buf();
    // Test executables live in `target/<profile>/deps`, the binaries one level up.
    if dir.ends_with("deps") {
        dir.pop();
    }
    Ok(dir.join("scale-worker"))
}

/// The `kafka-mock` executable: `--kafka-mock-bin`, or the one beside `scale-worker`.
pub(super) fn kafka_mock_bin(plan: &Plan) -> Result<PathBuf, String> {
    if let Some(bin) = &plan.kafka_mock_bin {
        return Ok(bin.clone());
    }
    Ok(worker_bin(plan)?.with_file_name("kafka-mock"))
}
