//! The benchmark's message and handlers: a handler writes one row per message in its own
//! table, in the transaction that completes the message, with the commit→handled latency;
//! with `--handler-ms` it first awaits a sleep inside that transaction (a handler calling
//! an SMTP server or an HTTP API).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bandeja::{Event, EventBatchHandler, EventHandler, HandlerContext, HandlerError, Payload};

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

/// The benchmark's handler: registered as a batch handler (the effect rows of a batch in one
/// statement) or as a handler per message (one row).
pub(crate) struct Effect<S> {
    /// The store, for the effect table's statement.
    pub(crate) store: S,
    /// The simulated handler time, awaited once per call (zero: none).
    pub(crate) sleep: Duration,
}

impl<S> Effect<S> {
    /// Awaits the simulated handler time, if any.
    async fn work(&self) {
        if !self.sleep.is_zero() {
            tokio::time::sleep(self.sleep).await;
        }
    }
}

impl<S: BenchDb> EventBatchHandler<S, BenchPing> for Effect<S> {
    async fn handle_batch(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        events: Vec<Event<BenchPing>>,
    ) -> Result<(), HandlerError> {
        self.work().await;
        let now = now_us();
        let rows: Vec<_> = events
            .iter()
            .map(|e| (e.id.0, now - e.payload.emitted_us))
            .collect();
        self.store.record_effects(ctx.conn(), &rows).await?;
        Ok(())
    }
}

impl<S: BenchDb> EventHandler<S, BenchPing> for Effect<S> {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<BenchPing>,
    ) -> Result<(), HandlerError> {
        self.work().await;
        let row = (event.id.0, now_us() - event.payload.emitted_us);
        self.store.record_effects(ctx.conn(), &[row]).await?;
        Ok(())
    }
}
