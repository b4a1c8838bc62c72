//! What a broker run depends on, and what it leaves behind.
//!
//! A NATS figure depends on what the server already holds: every run used to leave its two
//! streams (a fresh prefix each, 7 days of `max_age`) on the server, and JetStream then
//! serves, syncs and expires all of them beside the one being measured. So before a NATS
//! run the benchmark reads the server's streams (how many, consumers, messages, bytes) into
//! its JSON line, and after a run whose prefix it generated it deletes that run's streams.
//! (RabbitMQ queues of a generated prefix hold nothing after a drain; they are left.)

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
