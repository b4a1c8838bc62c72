//! The publishing side: one idempotent producer per transport; a message counts as
//! published only once its delivery report says every in-sync replica has it.
//!
//! A batch is handed to the producer at once (librdkafka batches and pipelines it, in
//! order per partition: the idempotent producer neither duplicates nor reorders on its
//! retries), then each delivery report is awaited until the dispatcher's deadline. A
//! report that has not come by then is *unavailable*: the row is published again later,
//! and if the first copy was delivered after all, the receiving inbox drops the second.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use bandeja_core::record::MessageKind;
use bandeja_core::transport::{wire, Instant, Outgoing, TransportError};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};

use crate::error::KafkaError;
use crate::names::{
    CAUSATION_HEADER, CONTENT_TYPE_HEADER, CORRELATION_HEADER, MESSAGE_ID_HEADER,
    SOURCE_SERVICE_HEADER, TRACEPARENT_HEADER, TYPE_HEADER,
};
use crate::settings::Settings;
use crate::topics::Topics;

/// The producer of a transport.
pub(crate) struct Publisher {
    settings: Arc<Settings>,
    topics: Arc<Topics>,
    producer: FutureProducer,
}

impl Publisher {
    pub(crate) fn new(settings: Arc<Settings>, topics: Arc<Topics>) -> Result<Self, KafkaError> {
        let producer = settings
            .producer()
            .create::<FutureProducer>()
            .map_err(|source| KafkaError::Client {
                client: "producer",
                source,
            })?;
        Ok(Publisher {
            settings,
            topics,
            producer,
        })
    }

    /// Publishes `messages`; one result per message, in order, by `deadline`.
    pub(crate) async fn publish(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> Vec<Result<(), TransportError>> {
        if deadline <= Instant::now() {
            return messages
                .iter()
                .map(|_| Err(TransportError::deadline()))
                .collect();
        }
        // One topic name per address of the batch (an events batch has one), not one per
        // message; the record keys borrowed from the rows.
        let names = &self.settings.names;
        let mut topic_of: HashMap<&str, String> = HashMap::new();
        for message in messages {
            topic_of
                .entry(message.address)
                .or_insert_with(|| names.topic(kind, message.address));
        }
        let ready = self.ensure_topics(topic_of.values(), deadline).await;
        let keys: Vec<Cow<'_, str>> = messages
            .iter()
            .map(|message| match &message.record.partition_key {
                Some(key) => Cow::Borrowed(key.as_str()),
                None => Cow::Owned(message.record.id.to_string()),
            })
            .collect();
        let mut results: Vec<Option<Result<(), TransportError>>> =
            messages.iter().map(|_| None).collect();
        let mut reports = Vec::with_capacity(messages.len());
        for (index, message) in messages.iter().enumerate() {
            let Some(topic) = topic_of.get(message.address) else {
                continue;
            };
            if let Some(Err(error)) = ready.get(topic.as_str()) {
                results[index] = Some(Err(error.clone().into()));
                continue;
            }
            let record = FutureRecord::to(topic)
                .partition(i32::from(message.partition))
                .key(keys[index].as_ref())
                .payload(message.body.as_slice())
                .headers(headers(message));
            match self.producer.send_result(record) {
                Ok(report) => reports.push((index, report)),
                Err((error, _)) => results[index] = Some(Err(KafkaError::Produce(error).into())),
            }
        }
        for (index, report) in reports {
            results[index] = Some(match tokio::time::timeout_at(deadline, report).await {
                Ok(Ok(Ok(_delivery))) => Ok(()),
                Ok(Ok(Err((error, _message)))) => Err(KafkaError::Produce(error).into()),
                Ok(Err(_canceled)) => Err(TransportError::unavailable(
                    "the Kafka producer was shut down before the delivery report",
                )),
                Err(_elapsed) => Err(TransportError::deadline()),
            });
        }
        results
            .into_iter()
            .map(|result| result.unwrap_or_else(|| Err(TransportError::deadline())))
            .collect()
    }

    /// Makes sure each topic of the batch exists with the right partition count, by
    /// `deadline`; what each gave.
    async fn ensure_topics<'t>(
        &self,
        topics: impl Iterator<Item = &'t String>,
        deadline: Instant,
    ) -> HashMap<&'t str, Result<(), KafkaError>> {
        let mut ready = HashMap::new();
        for topic in topics {
            let outcome = match tokio::time::timeout_at(deadline, self.topics.ensure(topic)).await {
                Ok(outcome) => outcome,
                Err(_elapsed) => Err(KafkaError::Metadata(format!(
                    "the topic `{topic}` could not be checked before the publish deadline"
                ))),
            };
            ready.insert(topic.as_str(), outcome);
        }
        ready
    }
}

/// The headers of a message: its id and type, the content type of the body (a
/// structured-mode CloudEvent's), and what tracing tools read.
fn headers(message: &Outgoing<'_>) -> OwnedHeaders {
    let record = message.record;
    let id = record.id.to_string();
    let causation = record.headers.causation_id.map(|id| id.to_string());
    let mut headers = OwnedHeaders::new_with_capacity(7)
        .insert(Header {
            key: MESSAGE_ID_HEADER,
            value: Some(id.as_str()),
        })
        .insert(Header {
            key: TYPE_HEADER,
            value: Some(record.message_type.as_str()),
        })
        .insert(Header {
            key: CONTENT_TYPE_HEADER,
            value: Some(wire::content_type(&message.body)),
        });
    let optional = [
        (CORRELATION_HEADER, record.headers.correlation_id.as_deref()),
        (CAUSATION_HEADER, causation.as_deref()),
        (TRACEPARENT_HEADER, record.headers.traceparent.as_deref()),
        (
            SOURCE_SERVICE_HEADER,
            record.headers.source_service.as_deref(),
        ),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            headers = headers.insert(Header {
                key,
                value: Some(value),
            });
        }
    }
    headers
}
