//! One stream's consumer loop: take over what a dead consumer left pending, read new
//! entries, store those with nothing older held elsewhere ([`super::order`]) in the inbox,
//! and acknowledge them only once stored ([`super::deliver`]). A batch that could not be stored is retried in
//! place, never skipped; the loop outlives an outage of any length and a stream or group
//! that disappeared (a server restart without persistence), which it creates again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bandeja_core::record::MessageKind;
use redis::aio::MultiplexedConnection;
use tokio::sync::watch;

use super::deliver::Wanted;
use super::group::GroupStream;
use super::order;
use crate::connection::{Backoff, Settings};
use crate::entry::{Entry, EntryId, Read};
use crate::error::RedisError;

/// How often entries waiting for an older one held elsewhere ask again.
const ORDER_POLL: Duration = Duration::from_millis(20);
/// The pause before reading the service's subscriptions again after that failed.
const SUBSCRIPTIONS_RETRY: Duration = Duration::from_secs(1);

/// What one turn of the loop ended with.
pub(super) enum Turn {
    Go,
    Stopped,
}

/// The consumer of one stream.
pub(crate) struct StreamConsumer {
    pub(crate) settings: Arc<Settings>,
    pub(crate) stream: GroupStream,
    /// The name its connection shows in `CLIENT LIST`.
    pub(crate) role: String,
    pub(crate) kind: MessageKind,
    pub(crate) batch_size: usize,
    pub(crate) sink: Arc<dyn bandeja_core::reception::InboxSink>,
    pub(crate) stop: watch::Receiver<bool>,
    /// Events only: what to store (commands have a stream per topic).
    pub(crate) wanted: Option<Wanted>,
    connection: Option<MultiplexedConnection>,
    /// Entries delivered to this consumer and not acknowledged, ascending.
    held: Vec<Entry>,
    /// Read this consumer's pending entries back before anything else.
    resync: bool,
    claim_cursor: EntryId,
    next_claim: Instant,
    pub(super) touched_at: Instant,
    waiting: bool,
}

impl StreamConsumer {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        settings: Arc<Settings>,
        stream: GroupStream,
        role: String,
        kind: MessageKind,
        batch_size: usize,
        sink: Arc<dyn bandeja_core::reception::InboxSink>,
        stop: watch::Receiver<bool>,
        wanted: Option<Wanted>,
    ) -> Self {
        StreamConsumer {
            settings,
            stream,
            role,
            kind,
            batch_size: batch_size.max(1),
            sink,
            stop,
            wanted,
            connection: None,
            held: Vec::new(),
            resync: true,
            claim_cursor: EntryId::ZERO,
            next_claim: Instant::now(),
            touched_at: Instant::now(),
            waiting: false,
        }
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Waits `pause` unless stopped first; `false` when stopped.
    pub(super) async fn pause(&self, pause: Duration) -> bool {
        let mut stop = self.stop.clone();
        tokio::select! {
            biased;
            () = stopped(&mut stop) => false,
            () = tokio::time::sleep(pause) => true,
        }
    }

    /// How often to look for entries a dead consumer left: a quarter of `claim_idle`,
    /// between 100 ms and 5 s.
    fn claim_interval(&self) -> Duration {
        (self.settings.options.claim_idle / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// Consumes until stopped, reconnecting after any failure.
    pub(crate) async fn run(mut self) {
        let mut backoff = Backoff::new(self.settings.options.reconnect_max_backoff);
        while !self.stopped() {
            let connection = match self.connection.clone() {
                Some(connection) => connection,
                None => match self.settings.connect(&self.role).await {
                    Ok(connection) => {
                        self.resync = true;
                        self.connection = Some(connection.clone());
                        connection
                    }
                    Err(error) => {
                        let pause = backoff.next();
                        tracing::warn!(stream = %self.stream.key, %error, retry_in = ?pause, "Redis consumer cannot connect: retrying");
                        if !self.pause(pause).await {
                            return;
                        }
                        continue;
                    }
                },
            };
            match self.turn(connection).await {
                Ok(Turn::Go) => backoff.reset(),
                Ok(Turn::Stopped) => return,
                Err(error) => {
                    self.resync = true;
                    if error.breaks_connection() {
                        self.connection = None;
                    }
                    if error.is_no_group() && self.recreate().await {
                        continue;
                    }
                    let pause = backoff.next();
                    tracing::warn!(stream = %self.stream.key, %error, retry_in = ?pause, "Redis consumer interrupted: going on");
                    if !self.pause(pause).await {
                        return;
                    }
                }
            }
        }
    }

    /// Creates the group again after the server said it is gone (the stream deleted, or
    /// lost in a restart); `true` once done.
    async fn recreate(&mut self) -> bool {
        let Some(mut connection) = self.connection.clone() else {
            return false;
        };
        match self.stream.create(&self.settings, &mut connection).await {
            Ok(()) => {
                tracing::warn!(
                    stream = %self.stream.key,
                    group = %self.stream.group,
                    "the consumer group was gone (the stream deleted, or lost in a server restart): created it again from the stream's start; entries lost with it are recovered by replaying the publishers' outboxes"
                );
                self.claim_cursor = EntryId::ZERO;
                true
            }
            Err(error) => {
                tracing::debug!(stream = %self.stream.key, %error, "creating the group again failed");
                false
            }
        }
    }

    /// One turn: resynchronize, take over, read, and store what may be stored.
    async fn turn(&mut self, mut connection: MultiplexedConnection) -> Result<Turn, RedisError> {
        if self.resync {
            let own = self
                .stream
                .read_own(&self.settings, &mut connection)
                .await?;
            self.absorb(&mut connection, own).await?;
            self.resync = false;
        }
        if Instant::now() >= self.next_claim {
            self.claim(&mut connection).await?;
            self.next_claim = Instant::now() + self.claim_interval();
        }
        if self.held.is_empty() {
            let mut stop = self.stop.clone();
            let block = self
                .settings
                .options
                .read_block
                .min(self.next_claim.saturating_duration_since(Instant::now()))
                .max(Duration::from_millis(1));
            let read = tokio::select! {
                biased;
                () = stopped(&mut stop) => return Ok(Turn::Stopped),
                read = self.stream.read_new(&self.settings, &mut connection, self.batch_size, block) => read?,
            };
            self.absorb(&mut connection, read).await?;
            if self.held.is_empty() {
                return Ok(Turn::Go);
            }
        }
        let ids: Vec<EntryId> = self.held.iter().map(|entry| entry.id).collect();
        let head = self
            .stream
            .pending_head(&self.settings, &mut connection, ids.len() + 1)
            .await?;
        let ready = order::storable(&ids, &head).min(self.batch_size);
        if ready == 0 {
            if !self.waiting {
                self.waiting = true;
                tracing::debug!(stream = %self.stream.key, held = ids.len(), "waiting for an older entry held by another consumer of the group");
            }
            self.keep(&mut connection).await?;
            return Ok(if self.pause(ORDER_POLL).await {
                Turn::Go
            } else {
                Turn::Stopped
            });
        }
        self.waiting = false;
        let rest = self.held.split_off(ready);
        let batch = std::mem::replace(&mut self.held, rest);
        match self.deliver(&mut connection, &batch).await {
            Ok(Some(turn)) => Ok(turn),
            Ok(None) => {
                // Not acknowledged, kept: tried again after a pause.
                self.merge(batch);
                self.keep(&mut connection).await?;
                Ok(if self.pause(SUBSCRIPTIONS_RETRY).await {
                    Turn::Go
                } else {
                    Turn::Stopped
                })
            }
            Err(error) => {
                self.merge(batch);
                Err(error)
            }
        }
    }

    /// Takes over entries idle for `claim_idle` with any consumer of the group.
    async fn claim(&mut self, connection: &mut MultiplexedConnection) -> Result<(), RedisError> {
        let claimed = self
            .stream
            .autoclaim(
                &self.settings,
                connection,
                self.settings.options.claim_idle,
                self.claim_cursor,
                self.batch_size,
            )
            .await?;
        self.claim_cursor = claimed.cursor;
        if !claimed.deleted.is_empty() {
            tracing::warn!(stream = %self.stream.key, entries = claimed.deleted.len(), "pending entries were trimmed from the stream before they were stored (`max_len`): lost here — replay the publishers' outboxes for them");
        }
        if !claimed.entries.is_empty() {
            tracing::info!(stream = %self.stream.key, entries = claimed.entries.len(), "took over entries left pending by another consumer of the group");
        }
        self.absorb(connection, claimed.entries).await
    }

    /// Adds entries read to those held; acknowledges the ids whose entries were trimmed
    /// while pending (nothing is left to store of them).
    async fn absorb(
        &mut self,
        connection: &mut MultiplexedConnection,
        read: Vec<Read>,
    ) -> Result<(), RedisError> {
        let mut gone = Vec::new();
        let mut entries = Vec::new();
        for item in read {
            match item {
                Read::Entry(entry) => entries.push(entry),
                Read::Gone(id) => gone.push(id),
            }
        }
        if !gone.is_empty() {
            tracing::warn!(stream = %self.stream.key, entries = gone.len(), "pending entries were trimmed from the stream before they were stored (`max_len`): lost here — replay the publishers' outboxes for them");
            self.stream.ack(&self.settings, connection, &gone).await?;
        }
        self.merge(entries);
        Ok(())
    }

    /// Adds entries to those held, in id order, once each.
    fn merge(&mut self, entries: Vec<Entry>) {
        if entries.is_empty() {
            return;
        }
        self.held.extend(entries);
        self.held.sort_by_key(|entry| entry.id);
        self.held.dedup_by_key(|entry| entry.id);
    }

    /// Refreshes the held entries' idle time (every third of `claim_idle`), so that no
    /// other process takes them over while this one waits to store them.
    async fn keep(&mut self, connection: &mut MultiplexedConnection) -> Result<(), RedisError> {
        if self.touched_at.elapsed() < self.settings.options.claim_idle / 3 {
            return Ok(());
        }
        let ids: Vec<EntryId> = self.held.iter().map(|entry| entry.id).collect();
        self.stream
            .set_idle(&self.settings, connection, &ids, Duration::ZERO)
            .await?;
        self.touched_at = Instant::now();
        Ok(())
    }
}

/// Resolves once the subscription is stopped (never if its handle was dropped: dropping a
/// subscription does not stop it).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|stopped| *stopped).await.is_err() {
        std::future::pending::<()>().await;
    }
}
