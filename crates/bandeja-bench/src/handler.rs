//! The benchmark's message and handler: the handler writes one row in its own table, in
//! the transaction that completes the message, with the commit→handled latency.

use std::marker::PhantomData;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bandeja::{Event, EventBatchHandler, HandlerContext, HandlerError, Payload};

use crate::db::BenchDb;

/// The benchmark's event.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct BenchPing {
    /// Sequence number.
    pub(crate) n: u64,
    /// Wall clock (µs since the epoch) just before the emitting transaction committed.
    pub(crate) emitted_us: i64,
}

impl Payload for BenchPing {
    const TYPE: &'static str = "bench.Ping";
}

/// Microseconds since the epoch.
pub(crate) fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

/// Writes the effect rows of a batch in one statement.
pub(crate) struct Effect<S>(pub(crate) S, pub(crate) PhantomData<fn() -> S>);

#[async_trait]
impl<S: BenchDb> EventBatchHandler<S, BenchPing> for Effect<S> {
    async fn handle_batch(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        events: Vec<Event<BenchPing>>,
    ) -> Result<(), HandlerError> {
        let now = now_us();
        let rows: Vec<_> = events
            .iter()
            .map(|e| (e.id.0, now - e.payload.emitted_us))
            .collect();
        self.0.record_effects(ctx.conn(), &rows).await?;
        Ok(())
    }
}
