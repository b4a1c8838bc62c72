//! One cycle of an inbox worker: claim → handlers (each inside the transaction that marks
//! its row COMPLETED: one per message, or one per batch with a savepoint per handler; in a
//! batched cycle a row that failed before runs alone beside the batch, so a poison message
//! that hangs or fails again holds up no healthy row) → failures written back in one
//! statement. The batch's outcomes are counted once per (type, subscriber) in the handled /
//! retried / failed metrics, with the commit→handled latency of each completed row.

use futures::StreamExt;

use crate::config::HandlerTransaction;
use crate::error::Result;
use crate::processing::{batch, single};
use crate::record::{BoxKind, StoredMessage};
use crate::runtime::Shared;
use crate::store::{Outcome, Store};
use crate::worker::Claimed;

/// Handlers at once, per message, on a single-writer store.
const SINGLE_WRITER_CONCURRENCY: usize = 4;

/// Smallest chunk of a batched cycle (one transaction, one commit per chunk).
const MIN_CHUNK: usize = 64;

/// Rows that failed before, handled at once in their own transactions beside the chunks of
/// a batched cycle (few: they are retries; the chunks keep the other connections).
const SUSPECT_CONCURRENCY: usize = 4;

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
    let concurrency = if shared.store.single_writer() {
        shared.handler_concurrency.min(SINGLE_WRITER_CONCURRENCY)
    } else {
        shared.handler_concurrency
    };
    let failures: Vec<Outcome> = if batched {
        // A row that failed before may be a poison message that fails or hangs again: it
        // runs in a transaction of its own beside the chunks, so a healthy row never waits
        // for it in a shared chunk. (One writer at a time: the chunk would wait for it
        // anyway, so everything stays in chunks.)
        let (suspects, fresh): (Vec<&StoredMessage>, Vec<&StoredMessage>) =
            if shared.store.single_writer() {
                (Vec::new(), claimed.iter().collect())
            } else {
                claimed.iter().partition(|m| m.retry_count > 0)
            };
        let (mut failures, alone) = futures::join!(
            chunked(shared, box_kind, &token, &fresh),
            one_by_one(shared, box_kind, &token, &suspects, SUSPECT_CONCURRENCY)
        );
        failures.extend(alone);
        failures
    } else {
        let all: Vec<&StoredMessage> = claimed.iter().collect();
        one_by_one(shared, box_kind, &token, &all, concurrency).await
    };
    if !failures.is_empty() {
        shared.store.resolve(box_kind, &token, &failures).await?;
    }
    crate::telemetry::processed(box_kind, &claimed, &failures);
    claimed_slot.clear();
    Ok(claimed.len())
}

/// Handles `messages` in chunks, one transaction per chunk, split over the handler
/// concurrency. Returns the failure outcomes.
async fn chunked<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    messages: &[&StoredMessage],
) -> Vec<Outcome> {
    if messages.is_empty() {
        return Vec::new();
    }
    let writers = if shared.store.single_writer() {
        1
    } else {
        shared.handler_concurrency
    };
    // Each chunk costs a commit: chunks of at least MIN_CHUNK rows, as many at once as the
    // concurrency allows.
    let chunks = writers.min(messages.len().div_ceil(MIN_CHUNK)).max(1);
    let size = messages.len().div_ceil(chunks);
    let runs: Vec<_> = messages
        .chunks(size)
        .map(|chunk| batch::handle_chunk(shared, box_kind, token, chunk))
        .collect();
    let results: Vec<Vec<Outcome>> = futures::stream::iter(runs)
        .buffer_unordered(chunks)
        .collect()
        .await;
    results.into_iter().flatten().collect()
}

/// Handles each of `messages` in its own transaction, `concurrency` at once. Returns the
/// failure outcomes.
async fn one_by_one<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    messages: &[&StoredMessage],
    concurrency: usize,
) -> Vec<Outcome> {
    let runs: Vec<_> = messages
        .iter()
        .map(|message| single::handle_one(shared, box_kind, token, message))
        .collect();
    let results: Vec<Option<Outcome>> = futures::stream::iter(runs)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    results.into_iter().flatten().collect()
}
