//! Storing what a stream consumer may store now: the entries of addresses the service
//! consumes go to the inbox sink in one call, retried until stored (the entries kept this
//! consumer's meanwhile), then the whole batch is acknowledged; the others are only
//! acknowledged.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

use super::consume::{StreamConsumer, Turn};
use crate::entry::{Entry, EntryId};
use crate::error::RedisError;

/// The first pause before storing a batch again after the inbox failed.
const FIRST_STORE_RETRY: Duration = Duration::from_millis(100);
/// The longest pause between two attempts to store a batch.
const MAX_STORE_RETRY: Duration = Duration::from_secs(5);
/// How often the service's subscribed addresses are read again even when every entry is
/// wanted (so an address retired stops being stored).
const REFRESH_WANTED: Duration = Duration::from_secs(10);

/// The addresses an events consumer stores: its own subscriptions, and those the database
/// knows for its service (a newer process's included).
pub(crate) struct Wanted {
    pub(crate) own: Arc<HashSet<String>>,
    pub(crate) all: HashSet<String>,
    pub(crate) refreshed_at: Option<Instant>,
}

impl Wanted {
    pub(crate) fn new(own: Arc<HashSet<String>>) -> Self {
        Wanted {
            all: own.as_ref().clone(),
            own,
            refreshed_at: None,
        }
    }

    /// An entry without an address is stored (the inbox decides what it is).
    fn wants(&self, entry: &Entry) -> bool {
        entry
            .address
            .as_ref()
            .is_none_or(|address| self.all.contains(address))
    }
}

impl StreamConsumer {
    /// Stores the wanted entries of `batch` (retrying until stored or stopped) and
    /// acknowledges the whole batch. `None`: not done now (the service's subscriptions
    /// could not be read), the batch stays held.
    pub(super) async fn deliver(
        &mut self,
        connection: &mut MultiplexedConnection,
        batch: &[Entry],
    ) -> Result<Option<Turn>, RedisError> {
        if !self.refresh_wanted(batch).await {
            return Ok(None);
        }
        let kept: Vec<&[u8]> = batch
            .iter()
            .filter(|entry| self.wanted.as_ref().is_none_or(|w| w.wants(entry)))
            .map(|entry| entry.body.as_slice())
            .collect();
        let ids: Vec<EntryId> = batch.iter().map(|entry| entry.id).collect();
        if kept.len() < batch.len() {
            tracing::trace!(stream = %self.stream.key, skipped = batch.len() - kept.len(), "acknowledged entries of addresses this service does not consume");
        }
        if !kept.is_empty() && !self.store(connection, &ids, &kept).await {
            return Ok(Some(Turn::Stopped));
        }
        self.stream.ack(&self.settings, connection, &ids).await?;
        self.touched_at = Instant::now();
        Ok(Some(Turn::Go))
    }

    /// Reads the service's subscribed addresses again when the batch has an entry of an
    /// address not known to be wanted, or every [`REFRESH_WANTED`]: another process of the
    /// service, of a newer version, may subscribe to types this one does not. `false` when
    /// they could not be read (the batch is not acknowledged then).
    async fn refresh_wanted(&mut self, batch: &[Entry]) -> bool {
        let Some(wanted) = &self.wanted else {
            return true;
        };
        let stale = wanted
            .refreshed_at
            .is_none_or(|at| at.elapsed() >= REFRESH_WANTED);
        if !stale && batch.iter().all(|entry| wanted.wants(entry)) {
            return true;
        }
        match self.sink.addresses(self.kind).await {
            Ok(addresses) => {
                if let Some(wanted) = &mut self.wanted {
                    wanted.all = wanted.own.as_ref().clone();
                    wanted.all.extend(addresses.into_iter().flatten());
                    wanted.refreshed_at = Some(Instant::now());
                }
                true
            }
            Err(error) => {
                tracing::warn!(stream = %self.stream.key, %error, "reading the service's subscriptions failed: the batch waits");
                false
            }
        }
    }

    /// Hands `bodies` to the sink until it stored them (`true`) or the subscription stops
    /// (`false`), keeping the entries this consumer's meanwhile.
    async fn store(
        &self,
        connection: &mut MultiplexedConnection,
        ids: &[EntryId],
        bodies: &[&[u8]],
    ) -> bool {
        let mut pause = FIRST_STORE_RETRY;
        loop {
            match self.accept_keeping(connection, ids, bodies).await {
                Ok(report) => {
                    tracing::debug!(stream = %self.stream.key, messages = bodies.len(), inserted = report.inserted, duplicates = report.duplicates, "stored");
                    return true;
                }
                Err(error) => {
                    tracing::warn!(stream = %self.stream.key, messages = bodies.len(), %error, retry_in = ?pause, "the inbox did not store a batch: retrying it");
                    self.touch(connection, ids).await;
                    if !self.pause(pause).await {
                        return false;
                    }
                    pause = (pause * 2).min(MAX_STORE_RETRY);
                }
            }
        }
    }

    /// One sink call; while it runs, the entries' idle time is refreshed every third of
    /// `claim_idle`, so that a slow store does not lose them to another process.
    async fn accept_keeping(
        &self,
        connection: &mut MultiplexedConnection,
        ids: &[EntryId],
        bodies: &[&[u8]],
    ) -> bandeja_core::Result<bandeja_core::store::ReceiveReport> {
        let accept = self.sink.accept(self.kind, bodies);
        tokio::pin!(accept);
        let every = self.settings.options.claim_idle / 3;
        loop {
            tokio::select! {
                report = &mut accept => return report,
                () = tokio::time::sleep(every) => self.touch(connection, ids).await,
            }
        }
    }

    /// Refreshes the entries' idle time; a failure only risks a takeover (and a copy the
    /// inbox absorbs).
    async fn touch(&self, connection: &mut MultiplexedConnection, ids: &[EntryId]) {
        if let Err(error) = self
            .stream
            .set_idle(&self.settings, connection, ids, Duration::ZERO)
            .await
        {
            tracing::debug!(stream = %self.stream.key, %error, "refreshing held entries failed");
        }
    }
}
