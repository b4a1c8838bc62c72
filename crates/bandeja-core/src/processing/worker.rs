//! One cycle of an inbox worker: claim → handlers (each inside the transaction that marks
//! its row COMPLETED: one per message, or one per batch with a savepoint per handler; in a
//! batched cycle a row that failed before, or whose subscriber was recently slow, runs
//! alone beside the batch, so a poison message that hangs or fails again holds up no
//! healthy row) → failures written back in one statement. Every handler (or batch
//! transaction) holds one of the inbox's permits while it runs; see
//! [`stragglers`](crate::processing::stragglers). The batch's outcomes are counted once per
//! (type, subscriber) in the handled / retried / failed metrics, with the commit→handled
//! latency of each completed row.

use futures::StreamExt;

use crate::config::HandlerTransaction;
use crate::error::Result;
use crate::processing::{batch, single, stragglers};
use crate::record::{BoxKind, StoredMessage};
use crate::runtime::Shared;
use crate::store::{Outcome, Store};
use crate::worker::Claimed;

/// Handlers at once, per message, on a single-writer store.
const SINGLE_WRITER_CONCURRENCY: usize = 4;

/// Smallest chunk of a batched cycle (one transaction, one commit per chunk).
const MIN_CHUNK: usize = 64;

/// Rows that failed before or whose subscriber is slow, handled at once in their own
/// transactions beside the chunks of a batched cycle (few: the chunks keep the other
/// permits).
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

/// Runs one cycle on `box_kind` (an inbox). Returns how many rows were claimed.
pub(crate) async fn cycle<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    claimed_slot: &Claimed,
) -> Result<usize> {
    let config = shared.config.group(box_kind.group());
    let token = shared.claim_token();
    let claimed = crate::claim::claim(shared, box_kind, &token, claimed_slot).await?;
    if claimed.is_empty() {
        return Ok(0);
    }
    claimed_slot.set(&token, &claimed);
    let batched = match config.handler_transaction {
        HandlerTransaction::Message => false,
        HandlerTransaction::Batch => true,
        HandlerTransaction::Auto => shared.store.prefers_batched_handlers(),
    };
    // One writer at a time (SQLite): more concurrent handler transactions only wait for
    // each other's locks; a few still let a slow handler not hold up the rest.
    let concurrency = handlers_at_once(shared.store.single_writer(), shared.handler_concurrency);
    let lane = Lane {
        shared,
        box_kind,
        token: &token,
        slot: claimed_slot,
    };
    let failures: Vec<Outcome> = if batched {
        // A row that failed before may be a poison message that fails or hangs again, and
        // a subscriber that was slow a moment ago likely is again: those run in
        // transactions of their own beside the chunks, so a healthy row never waits for
        // them in a shared chunk. (One writer at a time: the chunk would wait for them
        // anyway, so everything stays in chunks.)
        let (suspects, fresh): (Vec<&StoredMessage>, Vec<&StoredMessage>) =
            if shared.store.single_writer() {
                (Vec::new(), claimed.iter().collect())
            } else {
                claimed.iter().partition(|m| {
                    m.retry_count > 0 || shared.slow.is_slow(box_kind, m.subscriber.as_deref())
                })
            };
        let (mut failures, alone) = futures::join!(
            lane.chunked(&fresh),
            lane.one_by_one(&suspects, SUSPECT_CONCURRENCY, true)
        );
        failures.extend(alone);
        failures
    } else {
        let all: Vec<&StoredMessage> = claimed.iter().collect();
        lane.one_by_one(&all, concurrency, true).await
    };
    if !failures.is_empty() {
        shared.store.resolve(box_kind, &token, &failures).await?;
    }
    crate::telemetry::processed(box_kind, &claimed, &failures);
    claimed_slot.clear();
    Ok(claimed.len())
}

/// What the handlings of one cycle share: the claim token, and the slot that counts the
/// rows started.
struct Lane<'a, S: Store> {
    shared: &'a Shared<S>,
    box_kind: BoxKind,
    token: &'a str,
    slot: &'a Claimed,
}

impl<S: Store> Lane<'_, S> {
    /// Handles `messages` in chunks, one transaction per chunk (each holding one permit),
    /// split over the handler concurrency; then runs alone, each in its own transaction,
    /// the messages whose handlers a chunk set aside as too slow for it. Returns the
    /// failure outcomes.
    async fn chunked(&self, messages: &[&StoredMessage]) -> Vec<Outcome> {
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
        // the concurrency allows.
        let chunks = writers.min(messages.len().div_ceil(MIN_CHUNK)).max(1);
        let size = messages.len().div_ceil(chunks);
        let patience = stragglers::patience(shared.config.group(self.box_kind.group()));
        let runs: Vec<_> = messages
            .chunks(size)
            .map(|chunk| async move {
                let (mut failures, set_aside) = {
                    let _permit = shared.permits.of(self.box_kind).acquire().await;
                    self.slot.started(chunk.len());
                    batch::handle_chunk(shared, self.box_kind, self.token, chunk, patience).await
                };
                if !set_aside.is_empty() {
                    failures.extend(
                        self.one_by_one(&set_aside, SUSPECT_CONCURRENCY, false)
                            .await,
                    );
                }
                failures
            })
            .collect();
        let results: Vec<Vec<Outcome>> = futures::stream::iter(runs)
            .buffer_unordered(chunks)
            .collect()
            .await;
        results.into_iter().flatten().collect()
    }

    /// Handles each of `messages` in its own transaction, `concurrency` at once (each
    /// holding one permit; `count`: whether their start counts toward the cycle's rows
    /// started). Returns the failure outcomes.
    async fn one_by_one(
        &self,
        messages: &[&StoredMessage],
        concurrency: usize,
        count: bool,
    ) -> Vec<Outcome> {
        let shared = self.shared;
        let runs: Vec<_> = messages
            .iter()
            .map(|&message| async move {
                let _permit = shared.permits.of(self.box_kind).acquire().await;
                if count {
                    self.slot.started(1);
                }
                single::handle_one(shared, self.box_kind, self.token, message).await
            })
            .collect();
        let results: Vec<Option<Outcome>> = futures::stream::iter(runs)
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        results.into_iter().flatten().collect()
    }
}
