//! Publishing: every message sent first (pipelined), then every acknowledgement awaited at
//! once; a message counts only when its `PubAck` arrived before the publish deadline (the
//! dispatcher keeps it inside the rows' lease). Past the deadline nothing more is sent and
//! what is not acknowledged is unavailable (published again later; `Nats-Msg-Id` makes
//! JetStream drop the copy).

use async_nats::header::NATS_MESSAGE_ID;
use async_nats::jetstream::context::{PublishAckFuture, PublishError, PublishErrorKind};
use async_nats::jetstream::Context;
use async_nats::{HeaderMap, HeaderValue};
use bandeja_core::transport::{wire, Instant, Outgoing, TransportError};
use bandeja_core::MessageKind;

use crate::error::{stream_missing, NatsError};
use crate::names::Names;

/// The header with the message type.
pub const TYPE_HEADER: &str = "bandeja-type";
/// The header holding the body's content type (`application/cloudevents+json`).
pub const CONTENT_TYPE_HEADER: &str = "Content-Type";
/// The header with the correlation id.
pub const CORRELATION_HEADER: &str = "bandeja-correlation-id";
/// The header with the W3C trace context.
pub const TRACEPARENT_HEADER: &str = "traceparent";
/// The header with the emitting service.
pub const SOURCE_SERVICE_HEADER: &str = "bandeja-source-service";

/// What publishing needs of the transport.
pub(crate) struct Publisher<'a> {
    pub(crate) jetstream: &'a Context,
    pub(crate) names: &'a Names,
    pub(crate) partitions: u16,
}

/// A sent message: its subject and the acknowledgement to wait for.
type Sent = Result<(String, PublishAckFuture), NatsError>;

impl Publisher<'_> {
    /// Publishes `messages`; one result per message, in order, by `deadline`. Also says
    /// whether a stream was missing (the caller declares the streams again).
    pub(crate) async fn publish(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> (Vec<Result<(), TransportError>>, bool) {
        let mut sent: Vec<Option<Sent>> = Vec::with_capacity(messages.len());
        let mut outage: Option<PublishErrorKind> = None;
        for message in messages {
            if let Some(error) = outage {
                // The client could not even queue the previous one: do not wait again per message.
                sent.push(Some(Err(NatsError::Publish {
                    subject: self.names.subject(kind, message.partition, message.address),
                    source: PublishError::new(error),
                })));
                continue;
            }
            if Instant::now() >= deadline {
                sent.push(None);
                continue;
            }
            let Ok(result) = tokio::time::timeout_at(deadline, self.send(kind, message)).await
            else {
                sent.push(None);
                continue;
            };
            if let Err(NatsError::Publish { source, .. }) = &result {
                if matches!(
                    source.kind(),
                    PublishErrorKind::TimedOut | PublishErrorKind::BrokenPipe
                ) {
                    outage = Some(source.kind());
                }
            }
            sent.push(Some(result));
        }
        let acknowledged = futures::future::join_all(sent.into_iter().map(|sent| async move {
            let (subject, ack) = match sent? {
                Ok(sent) => sent,
                Err(error) => return Some(Err(error)),
            };
            match tokio::time::timeout_at(deadline, ack).await {
                Ok(Ok(_)) => Some(Ok(())),
                Ok(Err(source)) => Some(Err(NatsError::Publish { subject, source })),
                Err(_) => None,
            }
        }))
        .await;
        let missing = acknowledged
            .iter()
            .any(|result| matches!(result, Some(Err(error)) if stream_missing(error)));
        let results = acknowledged
            .into_iter()
            .map(|result| match result {
                Some(result) => result.map_err(TransportError::from),
                // Not sent, or not acknowledged, before the deadline.
                None => Err(TransportError::deadline()),
            })
            .collect();
        (results, missing)
    }

    async fn send(&self, kind: MessageKind, message: &Outgoing<'_>) -> Sent {
        if message.partition >= self.partitions {
            return Err(NatsError::Partition {
                partition: message.partition,
                partitions: self.partitions,
            });
        }
        let subject = self.names.subject(kind, message.partition, message.address);
        match self
            .jetstream
            .publish_with_headers(
                subject.clone(),
                headers(message),
                message.body.clone().into(),
            )
            .await
        {
            Ok(ack) => Ok((subject, ack)),
            Err(source) => Err(NatsError::Publish { subject, source }),
        }
    }
}

/// The headers of a message: the dedup id, the type and what tracing tools read. A value
/// the protocol cannot carry (a line break) is left out: the body holds every field anyway.
pub(crate) fn headers(message: &Outgoing<'_>) -> HeaderMap {
    let record = message.record;
    let mut headers = HeaderMap::new();
    if let Ok(id) = dedup_id(message).parse::<HeaderValue>() {
        headers.insert(NATS_MESSAGE_ID, id);
    }
    let mut put = |name: &'static str, value: &str| {
        if let Ok(value) = value.parse::<HeaderValue>() {
            headers.insert(name, value);
        }
    };
    put(TYPE_HEADER, &record.message_type);
    put(CONTENT_TYPE_HEADER, wire::content_type(&message.body));
    let optional = [
        (CORRELATION_HEADER, record.headers.correlation_id.as_deref()),
        (TRACEPARENT_HEADER, record.headers.traceparent.as_deref()),
        (
            SOURCE_SERVICE_HEADER,
            record.headers.source_service.as_deref(),
        ),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            put(name, value);
        }
    }
    headers
}

/// The `Nats-Msg-Id` of a message: its message id. A message published again (the outbox
/// worker retrying after a lost acknowledgement) carries the same id, so JetStream drops the
/// copy within the stream's duplicate window (2 minutes).
pub(crate) fn dedup_id(message: &Outgoing<'_>) -> String {
    message.record.id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bandeja_conformance::fixtures::Ping;
    use bandeja_core::{Event, MessageRecord};

    fn record() -> MessageRecord {
        let mut event = Event::new("A", "k", Ping { n: 1 }).with_correlation_id("c-1");
        event.headers.traceparent = Some("00-aa-bb-01".into());
        event.headers.source_service = Some("orders".into());
        MessageRecord::from_event(&event).expect("record")
    }

    fn outgoing(record: &MessageRecord, body: &[u8]) -> Outgoing<'static> {
        let record: &'static MessageRecord = Box::leak(Box::new(record.clone()));
        Outgoing {
            record,
            address: "conformance.Ping",
            partition: 0,
            body: body.to_vec(),
        }
    }

    #[test]
    fn headers_carry_the_dedup_id_type_and_trace() {
        let record = record();
        let headers = headers(&outgoing(&record, b"{}"));
        let get = |name: &str| headers.get(name).map(|v| v.as_str().to_owned());
        let id = get("Nats-Msg-Id").expect("dedup id");
        assert!(id.starts_with(&record.id.to_string()), "{id}");
        assert_eq!(get(TYPE_HEADER).as_deref(), Some("conformance.Ping"));
        assert_eq!(get(CORRELATION_HEADER).as_deref(), Some("c-1"));
        assert_eq!(get(TRACEPARENT_HEADER).as_deref(), Some("00-aa-bb-01"));
        assert_eq!(get(SOURCE_SERVICE_HEADER).as_deref(), Some("orders"));
    }

    #[test]
    fn a_header_value_with_a_line_break_is_left_out_without_panicking() {
        let mut record = record();
        record.headers.correlation_id = Some("evil\r\nPUB x 0\r\n".into());
        let headers = headers(&outgoing(&record, b"{}"));
        assert!(headers.get(CORRELATION_HEADER).is_none());
        assert!(headers.get(TYPE_HEADER).is_some());
    }

    #[test]
    fn the_dedup_id_is_the_message_id() {
        let record = record();
        assert_eq!(dedup_id(&outgoing(&record, b"one")), record.id.to_string());
    }
}
