//! The application side of a chaos run: emits the workload through the outbox API, a batch
//! per transaction at a paced rate. A batch whose transaction fails is tried again with the
//! same message ids, so a commit whose answer was lost (the database restarted under it)
//! comes back as a duplicate-id error and counts as committed: nothing is emitted twice and
//! nothing is skipped. Every failed attempt is timed, to show that emission fails with an
//! error during an outage instead of hanging.

use std::time::{Duration, Instant};

use bandeja::postgres::PgStore;
use bandeja::{Bandeja, Error, Event, MessageRecord, Outbox, Store, StoreErrorKind};

use super::plan::Plan;
use crate::{Poison, Tick};

/// An emission attempt that takes longer than this counts as a hang.
pub(crate) const HANG: Duration = Duration::from_secs(60);

/// What emission did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Emission {
    /// Messages committed to the outbox.
    pub committed: u64,
    /// Of them, poison messages.
    pub poison: u64,
    /// Attempts that failed with an error (then tried again).
    pub failed_attempts: u64,
    /// The longest time a failed attempt took to return its error, in milliseconds.
    pub slowest_failure_ms: u64,
    /// Batches found already committed when tried again (the lost-answer case).
    pub committed_before_error: u64,
    /// Attempts that did not return within a minute.
    pub hangs: u64,
    /// The first few distinct errors, for the report.
    pub errors: Vec<String>,
    /// How long emission took, in milliseconds.
    pub took_ms: u64,
}

/// The records of messages `from..to`: ticks over `plan.keys` keys, every
/// `plan.poison_every`-th a [`Poison`].
fn records(plan: &Plan, from: u64, to: u64) -> Result<(Vec<MessageRecord>, u64), Error> {
    let mut poison = 0;
    let mut out = Vec::with_capacity(usize::try_from(to - from).unwrap_or(0));
    for n in from..to {
        let key = format!("k{}", n % plan.keys);
        let record = if plan.poison_every > 0 && n % plan.poison_every == plan.poison_every - 1 {
            poison += 1;
            MessageRecord::from_event(&Event::new("Chaos", key, Poison { n }))?
        } else {
            MessageRecord::from_event(&Event::new("Chaos", key, Tick { n }))?
        };
        out.push(record);
    }
    Ok((out, poison))
}

/// One transaction: the batch into the outbox.
async fn emit_batch(
    store: &PgStore,
    outbox: &Outbox<PgStore>,
    records: Vec<MessageRecord>,
) -> Result<(), Error> {
    let mut tx = store.begin().await?;
    outbox.emit_records(&mut *tx, records).await?;
    store.commit(tx).await?;
    Ok(())
}

/// Emits `plan.messages` messages; returns what happened. Fails only on an error that
/// retrying cannot fix (a bad record, a broken schema).
pub(crate) async fn emit(store: &PgStore, plan: &Plan) -> Result<Emission, String> {
    let started = Instant::now();
    // The application's runtime (its workers run in other processes): its outbox.
    let outbox = Bandeja::builder(store.clone())
        .build()
        .map_err(|e| e.to_string())?
        .outbox();
    let mut report = Emission::default();
    let mut next = 0;
    while next < plan.messages {
        let to = (next + plan.emit_batch).min(plan.messages);
        let (batch, poison) = records(plan, next, to).map_err(|e| e.to_string())?;
        let mut pause = Duration::from_millis(100);
        loop {
            let attempt = Instant::now();
            let outcome =
                tokio::time::timeout(HANG, emit_batch(store, &outbox, batch.clone())).await;
            let error = match outcome {
                Ok(Ok(())) => break,
                Ok(Err(Error::Store(e))) if e.kind() == StoreErrorKind::Duplicate => {
                    report.committed_before_error += 1;
                    break;
                }
                Ok(Err(Error::Store(e))) if e.is_transient() => e.to_string(),
                Ok(Err(other)) => return Err(format!("emission failed for good: {other}")),
                Err(_) => {
                    report.hangs += 1;
                    format!("no answer within {HANG:?}")
                }
            };
            report.failed_attempts += 1;
            let took = super::ms(attempt.elapsed());
            report.slowest_failure_ms = report.slowest_failure_ms.max(took);
            if report.errors.len() < 5 && !report.errors.contains(&error) {
                report.errors.push(error.clone());
            }
            eprintln!("chaos: emission attempt failed after {took} ms: {error}");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
        report.committed += to - next;
        report.poison += poison;
        next = to;
        if plan.emit_rate > 0.0 {
            let due =
                Duration::try_from_secs_f64(next as f64 / plan.emit_rate).unwrap_or(Duration::ZERO);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                tokio::time::sleep(wait).await;
            }
        }
    }
    report.took_ms = super::ms(started.elapsed());
    Ok(report)
}
