//! The two streams of a prefix, declared idempotently (get or create), and the partition
//! count every service of the prefix must share.
//!
//! The count is recorded in each stream's description (`bandeja-partitions=<N>`; NATS 2.9
//! has no stream metadata) by the service that creates the stream. A process configured
//! with another count is refused when it declares the stream (at start), with an error
//! naming both. Two first services racing to create it with different counts cannot both
//! win: JetStream refuses the second creation (another configuration), which then reads the
//! stream and is refused the same way. A stream created before the count was recorded gets
//! it recorded by the first process that declares it.

use std::time::Duration;

use async_nats::jetstream::stream::{Config, RetentionPolicy, StorageType};
use async_nats::jetstream::Context;
use bandeja_core::MessageKind;

use crate::error::NatsError;
use crate::names::Names;

/// How long JetStream remembers a `Nats-Msg-Id` to drop a republished copy.
pub(crate) const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// What precedes the partition count in a stream's description.
const PARTITIONS_MARK: &str = "bandeja-partitions=";

/// The stream of a kind: file storage, limits retention with `max_age`, a two-minute
/// duplicate window (shorter when `max_age` is, which the server requires), and the
/// partition count in its description.
pub(crate) fn config(
    names: &Names,
    kind: MessageKind,
    max_age: Duration,
    partitions: u16,
) -> Config {
    Config {
        name: names.stream(kind),
        description: Some(format!(
            "bandeja messages, {PARTITIONS_MARK}{partitions}: every service of this prefix must be configured with {partitions} partitions"
        )),
        subjects: vec![names.stream_subjects(kind)],
        storage: StorageType::File,
        retention: RetentionPolicy::Limits,
        max_age,
        duplicate_window: DUPLICATE_WINDOW.min(max_age),
        ..Default::default()
    }
}

/// The partition count recorded in a stream's description.
pub(crate) fn recorded_partitions(description: Option<&str>) -> Option<u16> {
    let after = description?.split(PARTITIONS_MARK).nth(1)?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Gets the stream, or creates it when missing (an existing stream is left as it is), and
/// checks that it was declared with the partition count of `config`.
pub(crate) async fn declare(jetstream: &Context, config: Config) -> Result<(), NatsError> {
    let name = config.name.clone();
    let stream_error = |source| NatsError::Stream {
        stream: name.clone(),
        source,
    };
    let stream = match jetstream.get_or_create_stream(config.clone()).await {
        Ok(stream) => stream,
        // Another process created it in between, perhaps with another configuration.
        Err(source) => match jetstream.get_stream(&name).await {
            Ok(stream) => stream,
            Err(_) => return Err(stream_error(source)),
        },
    };
    let configured = recorded_partitions(config.description.as_deref());
    let existing = &stream.cached_info().config;
    match (
        recorded_partitions(existing.description.as_deref()),
        configured,
    ) {
        (Some(declared), Some(configured)) if declared != configured => {
            Err(NatsError::PartitionMismatch {
                stream: name,
                configured,
                declared,
            })
        }
        (None, Some(configured)) => {
            let mut recorded = existing.clone();
            recorded.description = config.description.clone();
            jetstream
                .update_stream(&recorded)
                .await
                .map_err(stream_error)?;
            tracing::warn!(stream = %name, partitions = configured, "the stream had no partition count recorded: recorded this process's");
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_keep_files_for_max_age_and_dedup_two_minutes() {
        let names = Names::new("shop");
        let day = Duration::from_secs(86_400);
        let events = config(&names, MessageKind::Event, day, 8);
        assert_eq!(recorded_partitions(events.description.as_deref()), Some(8));
        assert_eq!(events.name, "SHOP_EVENTS");
        assert_eq!(events.subjects, ["shop.events.>"]);
        assert_eq!(events.storage, StorageType::File);
        assert_eq!(events.retention, RetentionPolicy::Limits);
        assert_eq!(events.max_age, day);
        assert_eq!(events.duplicate_window, DUPLICATE_WINDOW);
        let short = config(&names, MessageKind::Command, Duration::from_secs(30), 3);
        assert_eq!(short.duplicate_window, Duration::from_secs(30));
        assert_eq!(recorded_partitions(short.description.as_deref()), Some(3));
    }

    #[test]
    fn a_description_without_a_count_records_none() {
        assert_eq!(recorded_partitions(None), None);
        assert_eq!(recorded_partitions(Some("made by hand")), None);
        assert_eq!(recorded_partitions(Some("bandeja-partitions=x")), None);
        assert_eq!(
            recorded_partitions(Some("a bandeja-partitions=12: b")),
            Some(12)
        );
    }
}
