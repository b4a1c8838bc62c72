//! The publishing side: one multiplexed connection shared by every caller, each call's
//! `XADD`s sent as one pipeline (one round trip, in the call's order), replaced on the
//! next publish after it broke or did not answer by a deadline.
//!
//! A message is `Ok` only once its `XADD` returned the entry's id: the server holds the
//! entry (in memory; see the crate documentation for what a restart loses). What has no
//! answer by the deadline the dispatcher passes is unavailable (published again later;
//! the inbox absorbs a copy). A key that holds something else than a stream refuses the
//! message: that is rejected, it spends a retry and ends FAILED with the reason.

use std::sync::Arc;

use bandeja_core::record::{MessageKind, MessageRecord};
use bandeja_core::transport::{Instant, Outgoing, TransportError};
use redis::{RedisResult, Value};

use crate::connection::{Link, Settings};
use crate::entry::{
    ADDRESS_FIELD, BODY_FIELD, CORRELATION_FIELD, ID_FIELD, SOURCE_SERVICE_FIELD,
    TRACEPARENT_FIELD, TYPE_FIELD,
};
use crate::error::RedisError;

/// The publishing connection, reconnected on demand.
#[derive(Debug)]
pub(crate) struct Publisher {
    settings: Arc<Settings>,
    link: Arc<Link>,
}

impl Publisher {
    /// A publisher on `link`.
    pub(crate) fn new(settings: Arc<Settings>, link: Arc<Link>) -> Publisher {
        Publisher { settings, link }
    }

    /// Sends every message in one pipeline and waits for the replies until `deadline`:
    /// one result per message, in order.
    pub(crate) async fn publish(
        &self,
        kind: MessageKind,
        messages: &[Outgoing<'_>],
        deadline: Instant,
    ) -> Vec<Result<(), TransportError>> {
        let late = || {
            messages
                .iter()
                .map(|_| Err(TransportError::deadline()))
                .collect()
        };
        if messages.is_empty() {
            return Vec::new();
        }
        if Instant::now() >= deadline {
            return late();
        }
        let lease = match tokio::time::timeout_at(deadline, self.link.get()).await {
            Ok(Ok(lease)) => lease,
            Ok(Err(error)) => {
                tracing::debug!(%error, "Redis publish: server unavailable");
                return messages.iter().map(|_| Err(error.clone().into())).collect();
            }
            Err(_) => return late(),
        };
        let mut results: Vec<Option<Result<(), TransportError>>> =
            messages.iter().map(|_| None).collect();
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        let mut sent = Vec::with_capacity(messages.len());
        for (index, message) in messages.iter().enumerate() {
            let partitions = self.settings.options.partitions;
            if message.partition >= partitions {
                let error = RedisError::Partition {
                    partition: message.partition,
                    partitions,
                };
                tracing::warn!(message_id = %message.record.id, %error, "not published");
                results[index] = Some(Err(error.into()));
                continue;
            }
            let stream = self
                .settings
                .names
                .stream(kind, message.address, message.partition);
            pipe.add_command(self.xadd(&stream, message));
            sent.push((index, stream));
        }
        if sent.is_empty() {
            return finish(results);
        }
        let mut connection = lease.connection.clone();
        let replies = pipe.query_async::<Vec<RedisResult<Value>>>(&mut connection);
        match tokio::time::timeout_at(deadline, replies).await {
            Err(_) => {
                // No answer in time: its replies could still come, out of step with the next
                // calls' — the next publish opens a new connection.
                self.link.broken(&lease).await;
                for (index, _) in sent {
                    results[index] = Some(Err(TransportError::deadline()));
                }
            }
            Ok(Err(source)) => {
                let error = RedisError::command("XADD (pipeline)", "", source);
                tracing::warn!(%error, "Redis publish failed");
                if error.breaks_connection() {
                    self.link.broken(&lease).await;
                }
                for (index, _) in sent {
                    results[index] = Some(Err(error.clone().into()));
                }
            }
            Ok(Ok(replies)) => {
                // A reply missing for a message leaves it without a result: not published.
                for ((index, stream), reply) in sent.into_iter().zip(replies) {
                    results[index] = Some(
                        reply
                            .map(|_| ())
                            .map_err(|e| RedisError::command("XADD", &stream, e).into()),
                    );
                }
            }
        }
        finish(results)
    }

    /// `XADD <stream> MAXLEN ~ <max_len> * id … address … type … [correlation_id …]
    /// [traceparent …] [source_service …] body …`.
    fn xadd(&self, stream: &str, message: &Outgoing<'_>) -> redis::Cmd {
        let record: &MessageRecord = message.record;
        let mut xadd = redis::cmd("XADD");
        xadd.arg(stream)
            .arg("MAXLEN")
            .arg("~")
            .arg(self.settings.options.max_len)
            .arg("*")
            .arg(ID_FIELD)
            .arg(record.id.to_string())
            .arg(ADDRESS_FIELD)
            .arg(message.address)
            .arg(TYPE_FIELD)
            .arg(record.message_type.as_str());
        let headers = &record.headers;
        for (field, value) in [
            (CORRELATION_FIELD, &headers.correlation_id),
            (TRACEPARENT_FIELD, &headers.traceparent),
            (SOURCE_SERVICE_FIELD, &headers.source_service),
        ] {
            if let Some(value) = value {
                xadd.arg(field).arg(value.as_str());
            }
        }
        xadd.arg(BODY_FIELD).arg(message.body.as_slice());
        xadd
    }
}

/// One result per message (a message without one was not acknowledged).
fn finish(results: Vec<Option<Result<(), TransportError>>>) -> Vec<Result<(), TransportError>> {
    results
        .into_iter()
        .map(|result| {
            result.unwrap_or_else(|| {
                Err(RedisError::reply("XADD (pipeline)", "fewer replies than commands").into())
            })
        })
        .collect()
}
