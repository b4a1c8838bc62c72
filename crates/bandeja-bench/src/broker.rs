//! What a broker run depends on, and what it leaves behind.
//!
//! A NATS figure depends on what the server already holds: every run used to leave its two
//! streams (a fresh prefix each, 7 days of `max_age`) on the server, and JetStream then
//! serves, syncs and expires all of them beside the one being measured. So before a NATS
//! run the benchmark reads the server's streams (how many, consumers, messages, bytes) into
//! its JSON line, and after a run whose prefix it generated it deletes that run's streams.
//! (RabbitMQ queues of a generated prefix hold nothing after a drain; they are left.) A
//! Redis run's streams are deleted too (the local Redis keeps them in memory). A Kafka run
//! without `--broker-url` runs librdkafka's mock cluster in this process, with the topics
//! created at the run's partition count; it ends with the process.

use crate::db::BoxError;

/// The JetStream streams on the server before the run (how many, their consumers,
/// messages and bytes), for the JSON line. (Read stream by stream: the account summary of
/// NATS 2.9 does not parse with this client.)
pub(crate) async fn nats_state(url: &str) -> Result<serde_json::Value, BoxError> {
    use futures::TryStreamExt;
    let client = async_nats::connect(url).await?;
    let jetstream = async_nats::jetstream::new(client);
    let streams: Vec<async_nats::jetstream::stream::Info> =
        jetstream.streams().try_collect().await?;
    Ok(serde_json::json!({
        "nats_streams_before": streams.len(),
        "nats_consumers_before": streams.iter().map(|s| s.state.consumer_count).sum::<usize>(),
        "nats_messages_before": streams.iter().map(|s| s.state.messages).sum::<u64>(),
        "nats_stored_bytes_before": streams.iter().map(|s| s.state.bytes).sum::<u64>(),
    }))
}

/// Deletes the streams of `prefix` (`<PREFIX>_EVENTS`, `<PREFIX>_COMMANDS`); returns how
/// many there were.
pub(crate) async fn nats_delete_streams(url: &str, prefix: &str) -> Result<usize, BoxError> {
    use futures::TryStreamExt;
    let client = async_nats::connect(url).await?;
    let jetstream = async_nats::jetstream::new(client);
    let stem = format!("{}_", prefix.to_uppercase());
    let names: Vec<String> = jetstream.stream_names().try_collect().await?;
    let mut deleted = 0;
    for name in names.iter().filter(|n| n.starts_with(&stem)) {
        jetstream.delete_stream(name).await?;
        deleted += 1;
    }
    Ok(deleted)
}

/// Deletes the streams and keys of `prefix` on the Redis at `url`; returns how many.
pub(crate) async fn redis_delete_streams(url: &str, prefix: &str) -> Result<usize, BoxError> {
    let client = redis::Client::open(url)?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}.*"))
        .query_async(&mut connection)
        .await?;
    if !keys.is_empty() {
        let _: i64 = redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut connection)
            .await?;
    }
    Ok(keys.len())
}

/// A mock Kafka cluster of three brokers for the run (on a thread of its own, as long as
/// the process lives), with the events topic of `prefix` created at `partitions`; its
/// bootstrap servers.
pub(crate) fn kafka_mock(prefix: &str, partitions: u16) -> Result<String, BoxError> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let topic = format!("{prefix}.events");
    std::thread::spawn(move || {
        let started = rdkafka::mocking::MockCluster::new(3).and_then(|cluster| {
            cluster.create_topic(&topic, i32::from(partitions), 1)?;
            Ok(cluster)
        });
        match started {
            Ok(cluster) => {
                let _ = sender.send(Ok(cluster.bootstrap_servers()));
                loop {
                    std::thread::park();
                }
            }
            Err(error) => {
                let _ = sender.send(Err(error.to_string()));
            }
        }
    });
    Ok(receiver.recv()??)
}
