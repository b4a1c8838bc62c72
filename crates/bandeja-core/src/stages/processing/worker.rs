//! One cycle of an inbox worker: claim → handlers, under a lease renewed while they run
//! (each inside the transaction that marks its row COMPLETED: one per message, or one per
//! chunk with a savepoint per handler for the subscribers measured fast, see
//! [`pace`](crate::pace); a row that failed before runs alone, so a poison
//! message that hangs or fails again holds up no healthy row) → failures written back in
//! one statement. Every handler (or batch
//! transaction) holds one of the inbox's permits while it runs; see
//! [`stragglers`](crate::stragglers). The batch's outcomes are counted once per
//! (type, subscriber) in the handled / retried / failed metrics, with the commit→handled
//! latency of each completed row.

use std::time::Duration;

use futures::StreamExt;

use crate::config::HandlerTransaction;
use crate::context::Shared;
use crate::error::Result;
use crate::lease::Lease;
use crate::processing::{batch, single};
use crate::record::{BoxKind, StoredMessage};
use crate::store::{Outcome, Store};
use crate::worker::Claimed;
use crate::{pace, stragglers};

/// Handlers at once, per message, on a single-writer store.
const SINGLE_WRITER_CONCURRENCY: usize = 4;

/// Smallest chunk of a batched cycle (one transaction, one commit per chunk).
const MIN_CHUNK: usize = 64;

/// Rows a chunk hands over or leaves to run alone, handled at once in their own
/// transactions (few: the chunks keep the other permits).
const SUSPECT_CONCURRENCY: usize = 4;

/// Handlers at once per inbox: the configured handler concurrency, at most
/// [`SINGLE_WRITER_CONCURRENCY`] on a single-writer store.
pub(crate) fn handlers_at_once(single_writer: bool, configured: usize) -> usize {
    if single_writer {
        configured.min(SINGLE_WRITER_CONCURRENCY)
    } else {
        configured
    }
    .max(1)
}

/// This stage's cycle, as the engine's worker loop of an inbox runs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Processing;

impl<S: Store> crate::worker::Cycle<S> for Processing {
    fn cycle<'a>(
        self,
        shared: &'a Shared<S>,
        box_kind: BoxKind,
        claimed: &'a Claimed,
    ) -> impl std::future::Future<Output = Result<usize>> + Send + 'a {
        cycle(shared, box_kind, claimed)
    }
}

/// Runs one cycle on `box_kind` (an inbox). Returns how many rows were claimed.
pub(crate) async fn cycle<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    claimed_slot: &Claimed,
) -> Result<usize> {
    let config = shared.config.group(box_kind);
    let token = shared.claim_token();
    let claimed_at = tokio::time::Instant::now();
    let claimed = crate::claim::claim(shared, box_kind, &token, claimed_slot).await?;
    if claimed.is_empty() {
        return Ok(0);
    }
    claimed_slot.set(&token, &claimed);
    let lease = Lease::new(config.lock_at_most_for, claimed_at);
    let lane = Lane {
        shared,
        box_kind,
        token: &token,
        slot: claimed_slot,
        lease: &lease,
    };
    let (rejected, handled): (Vec<&StoredMessage>, Vec<&StoredMessage>) = claimed
        .iter()
        .partition(|m| crate::reception::rejected::is_rejected(m));
    let mut failures = if rejected.is_empty() {
        Vec::new()
    } else {
        crate::reception::rejected::settle(shared, box_kind, &rejected).await
    };
    if !handled.is_empty() {
        failures.extend(
            lease
                .renewed_during(&shared.store, box_kind, &token, lane.handle(&handled))
                .await,
        );
    }
    if !failures.is_empty() {
        shared.store.resolve(box_kind, &token, &failures).await?;
    }
    crate::telemetry::processed(box_kind, &claimed, &failures);
    claimed_slot.clear();
    Ok(claimed.len())
}

/// What the handlings of one cycle share: the claim token and its lease, and the slot that
/// counts the rows started.
struct Lane<'a, S: Store> {
    shared: &'a Shared<S>,
    box_kind: BoxKind,
    token: &'a str,
    slot: &'a Claimed,
    lease: &'a Lease,
}

impl<S: Store> Lane<'_, S> {
    /// Handles the claimed rows: batched, for the subscribers measured fast enough for it
    /// on a store that prefers it (see [`pace`](crate::pace)), each alone
    /// otherwise. Returns the outcomes to write back.
    async fn handle(&self, claimed: &[&StoredMessage]) -> Vec<Outcome> {
        let shared = self.shared;
        let config = shared.config.group(self.box_kind);
        let may_batch = match config.handler_transaction {
            HandlerTransaction::Message => false,
            HandlerTransaction::Batch => true,
            HandlerTransaction::Auto => shared.store.prefers_batched_handlers(),
        };
        // One writer at a time (SQLite): the permits are fewer (see `handlers_at_once`).
        let concurrency = shared.permits.capacity();
        if !may_batch {
            return self.one_by_one(claimed, concurrency).await;
        }
        // `handler-transaction = "batch"` batches every subscriber; `auto` only those
        // measured fast. A row that failed before may be a poison message that fails or
        // hangs again: it runs alone beside the chunks, as every retry does.
        let forced = config.handler_transaction == HandlerTransaction::Batch;
        let mut slowest = Duration::ZERO;
        let (batched, alone): (Vec<&StoredMessage>, Vec<&StoredMessage>) =
            claimed.iter().copied().partition(|m| {
                // A retried row runs alone on every store: on a single writer, a poison
                // message that hangs inside a chunk would hold the one write lock.
                if m.retry_count > 0 {
                    return false;
                }
                match shared.pace.batched(self.box_kind, m.subscriber.as_deref()) {
                    Some(average) => {
                        slowest = slowest.max(average);
                        true
                    }
                    None => forced,
                }
            });
        let (mut failures, alone) = futures::join!(
            self.chunked(&batched, slowest),
            self.one_by_one(&alone, concurrency)
        );
        failures.extend(alone);
        failures
    }

    /// Handles `messages` in chunks, one transaction per chunk (each holding one permit),
    /// split over the handler concurrency; a chunk holds one tenant only (a tenant context
    /// a handler sets with `SET LOCAL` never reaches another tenant's handler) and at most
    /// the [chunk budget](crate::pace::CHUNK_BUDGET) (single writer:
    /// [its own](crate::pace::SINGLE_WRITER_CHUNK_BUDGET)) of measured handler
    /// time. The messages a chunk leaves to run alone (handed over past the patience, or
    /// after its transaction broke) run each in its own transaction. Returns the
    /// outcomes to write back.
    async fn chunked(&self, messages: &[&StoredMessage], slowest: Duration) -> Vec<Outcome> {
        if messages.is_empty() {
            return Vec::new();
        }
        let shared = self.shared;
        let writers = if shared.store.single_writer() {
            1
        } else {
            shared.handler_concurrency
        };
        // Each chunk costs a commit: chunks of at least MIN_CHUNK rows, as many at once as
        // the concurrency allows, within the time budget.
        let chunks = writers.min(messages.len().div_ceil(MIN_CHUNK)).max(1);
        let size = messages
            .len()
            .div_ceil(chunks)
            .min(pace::chunk_limit(slowest, shared.store.single_writer()))
            .max(1);
        let patience = stragglers::patience(shared.config.group(self.box_kind));
        let runs: Vec<_> = by_tenant(messages)
            .into_iter()
            .flat_map(|group| {
                group
                    .chunks(size)
                    .map(<[&StoredMessage]>::to_vec)
                    .collect::<Vec<_>>()
            })
            .map(|chunk| async move {
                let mut failures = Vec::new();
                let batch = batch::Chunk::new(shared, self.box_kind, &chunk, &mut failures);
                // The chunk's permit is held by its run alone: the messages it hands over
                // take permits of their own, and must never wait for the chunk's.
                let running = async {
                    let _permit = shared.permits.of(self.box_kind).acquire().await;
                    self.slot.started(chunk.len());
                    batch
                        .run(shared, self.box_kind, self.token, self.lease)
                        .await
                };
                let (left, handed_over) =
                    futures::join!(running, self.hand_over_after(&batch, patience));
                let (more, alone, unattributed) = left;
                failures.extend(more);
                failures.extend(handed_over);
                if !alone.is_empty() {
                    let spent = u32::from(unattributed);
                    failures.extend(self.alone(&alone, spent).await);
                }
                failures
            })
            .collect();
        let results: Vec<Vec<Outcome>> = futures::stream::iter(runs)
            .buffer_unordered(writers)
            .collect()
            .await;
        results.into_iter().flatten().collect()
    }

    /// If `batch` is still running after `patience`, takes the messages it has not started
    /// and runs them alone beside it (the handler it is waiting for is slow); returns their
    /// outcomes.
    async fn hand_over_after(
        &self,
        batch: &batch::Chunk<'_, S>,
        patience: Duration,
    ) -> Vec<Outcome> {
        // The patience counts from the chunk's start, not from its wait for a permit.
        tokio::select! {
            () = batch.finished() => return Vec::new(),
            () = batch.began() => {}
        }
        tokio::select! {
            () = batch.finished() => return Vec::new(),
            () = tokio::time::sleep(patience) => {}
        }
        let rest = batch.take_rest();
        if rest.is_empty() {
            return Vec::new();
        }
        tracing::info!(
            box = %self.box_kind,
            messages = rest.len(),
            "a batched handler is slow: the rest of its chunk runs alone beside it"
        );
        self.alone(&rest, 0).await
    }

    /// Runs what a chunk handed over or left, each alone, [`SUSPECT_CONCURRENCY`] at once
    /// (their start was counted with the chunk's); a failed attempt also spends `spent`
    /// retries (the chunk's attempt it caused).
    async fn alone(&self, messages: &[&StoredMessage], spent: u32) -> Vec<Outcome> {
        self.each_in_its_own_transaction(messages, SUSPECT_CONCURRENCY, false, spent)
            .await
    }

    /// Handles each of `messages` in its own transaction, `concurrency` at once (each
    /// holding one permit, its start counted toward the cycle's rows started). Returns the
    /// outcomes to write back.
    async fn one_by_one(&self, messages: &[&StoredMessage], concurrency: usize) -> Vec<Outcome> {
        self.each_in_its_own_transaction(messages, concurrency, true, 0)
            .await
    }

    /// Handles each of `messages` in its own transaction, `concurrency` at once, each
    /// holding one permit (`count`: whether its start counts toward the cycle's rows
    /// started; `spent`: retries a failed attempt spends beyond its own).
    async fn each_in_its_own_transaction(
        &self,
        messages: &[&StoredMessage],
        concurrency: usize,
        count: bool,
        spent: u32,
    ) -> Vec<Outcome> {
        let shared = self.shared;
        let runs: Vec<_> = messages
            .iter()
            .map(|&message| async move {
                let _permit = shared.permits.of(self.box_kind).acquire().await;
                if count {
                    self.slot.started(1);
                }
                single::handle_one(
                    shared,
                    self.box_kind,
                    self.token,
                    message,
                    self.lease,
                    spent,
                )
                .await
            })
            .collect();
        let results: Vec<Option<Outcome>> = futures::stream::iter(runs)
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        results.into_iter().flatten().collect()
    }
}

/// `messages` grouped by tenant, each group in claim order.
fn by_tenant<'m>(messages: &[&'m StoredMessage]) -> Vec<Vec<&'m StoredMessage>> {
    let mut groups: Vec<Vec<&'m StoredMessage>> = Vec::new();
    for &message in messages {
        let tenant = message.record.inbox_tenant();
        match groups
            .iter_mut()
            .find(|g| g[0].record.inbox_tenant() == tenant)
        {
            Some(group) => group.push(message),
            None => groups.push(vec![message]),
        }
    }
    groups
}
