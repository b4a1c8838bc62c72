//! The two streams of a prefix, declared idempotently (get or create).

use std::time::Duration;

use async_nats::jetstream::stream::{Config, RetentionPolicy, StorageType};
use async_nats::jetstream::Context;
use bandeja_core::MessageKind;

use crate::error::NatsError;
use crate::names::Names;

/// How long JetStream remembers a `Nats-Msg-Id` to drop a republished copy.
pub(crate) const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// The stream of a kind: file storage, limits retention with `max_age`, a two-minute
/// duplicate window (shorter when `max_age` is, which the server requires).
pub(crate) fn config(names: &Names, kind: MessageKind, max_age: Duration) -> Config {
    Config {
        name: names.stream(kind),
        subjects: vec![names.stream_subjects(kind)],
        storage: StorageType::File,
        retention: RetentionPolicy::Limits,
        max_age,
        duplicate_window: DUPLICATE_WINDOW.min(max_age),
        ..Default::default()
    }
}

/// Gets the stream, or creates it when missing (an existing stream is left as it is).
pub(crate) async fn declare(jetstream: &Context, config: Config) -> Result<(), NatsError> {
    let stream = config.name.clone();
    match jetstream.get_or_create_stream(config).await {
        Ok(_) => Ok(()),
        Err(source) => Err(NatsError::Stream { stream, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_keep_files_for_max_age_and_dedup_two_minutes() {
        let names = Names::new("shop");
        let day = Duration::from_secs(86_400);
        let events = config(&names, MessageKind::Event, day);
        assert_eq!(events.name, "SHOP_EVENTS");
        assert_eq!(events.subjects, ["shop.events.>"]);
        assert_eq!(events.storage, StorageType::File);
        assert_eq!(events.retention, RetentionPolicy::Limits);
        assert_eq!(events.max_age, day);
        assert_eq!(events.duplicate_window, DUPLICATE_WINDOW);
        let short = config(&names, MessageKind::Command, Duration::from_secs(30));
        assert_eq!(short.duplicate_window, Duration::from_secs(30));
    }
}
