//! The test handler of the runtime checks: a [`Recorder`] counts and records what it sees and
//! behaves as told (succeeds, fails, panics, hangs or pauses, on every message or one).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_core::envelope::{Event, MessageId};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::store::Store;

use crate::fixtures::{Ping, Pong};

/// What a test handler saw: (message id, subscriber, payload number).
type Seen = Arc<Mutex<Vec<(MessageId, String, u64)>>>;

/// How a [`Recorder`] behaves.
#[derive(Clone, Copy)]
pub(crate) enum Behaviour {
    Succeed,
    Fail,
    FailPermanently,
    PanicOn(u64),
    FailFirstAttemptOf(u64),
    /// Every attempt on this payload number fails.
    FailOn(u64),
    /// The first attempts of every message fail (this many), the next one succeeds.
    FailAttempts(u32),
    Hang,
    /// Every attempt on this payload number hangs forever.
    HangOn(u64),
    Pause(Duration),
    /// Every attempt on this payload number takes this long; the others are instant.
    PauseOn(u64, Duration),
}

/// Every attempt a [`Recorder`] saw, in the order they started: (subscriber, payload
/// number, retry count of the row).
type Tried = Arc<Mutex<Vec<(String, u64, u32)>>>;

#[derive(Clone)]
pub(crate) struct Recorder {
    pub(crate) seen: Seen,
    pub(crate) attempts: Arc<Mutex<u32>>,
    pub(crate) tried: Tried,
    pub(crate) behaviour: Behaviour,
    pub(crate) emit_pong: bool,
}

impl Recorder {
    pub(crate) fn new(behaviour: Behaviour) -> Self {
        Recorder {
            seen: Seen::default(),
            attempts: Arc::default(),
            tried: Tried::default(),
            behaviour,
            emit_pong: false,
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.seen.lock().map(|s| s.len()).unwrap_or_default()
    }

    pub(crate) fn attempts(&self) -> u32 {
        self.attempts.lock().map(|a| *a).unwrap_or_default()
    }

    /// Every attempt so far, in order.
    pub(crate) fn tried(&self) -> Vec<(String, u64, u32)> {
        self.tried.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// The retry counts of the attempts on payload `n`, in order.
    pub(crate) fn tries_of(&self, n: u64) -> Vec<u32> {
        self.tried()
            .into_iter()
            .filter(|t| t.1 == n)
            .map(|t| t.2)
            .collect()
    }

    /// The payload numbers handled successfully, sorted.
    pub(crate) fn handled(&self) -> Vec<u64> {
        let mut handled: Vec<u64> = self
            .seen
            .lock()
            .map(|s| s.iter().map(|s| s.2).collect())
            .unwrap_or_default();
        handled.sort_unstable();
        handled
    }
}

impl Recorder {
    pub(crate) async fn on<S: Store>(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        id: MessageId,
        n: u64,
    ) -> Result<(), HandlerError> {
        if let Ok(mut a) = self.attempts.lock() {
            *a += 1;
        }
        if let Ok(mut tried) = self.tried.lock() {
            tried.push((ctx.subscriber().to_owned(), n, ctx.retry_count()));
        }
        if self.emit_pong {
            ctx.emit(Event::new("Ping", format!("p{n}"), Pong { n }))?;
        }
        match self.behaviour {
            Behaviour::Fail => return Err("boom".into()),
            Behaviour::FailPermanently => return Err(HandlerError::permanent("bad data")),
            Behaviour::PanicOn(p) if p == n => panic!("handler bug on {n}"),
            Behaviour::FailFirstAttemptOf(f) if f == n && ctx.retry_count() == 0 => {
                return Err("first attempt fails".into())
            }
            Behaviour::FailOn(f) if f == n => return Err(format!("always fails on {n}").into()),
            Behaviour::FailAttempts(k) if ctx.retry_count() < k => {
                return Err(format!("flaky: attempt {} fails", ctx.retry_count() + 1).into())
            }
            Behaviour::Hang => std::future::pending::<()>().await,
            Behaviour::HangOn(h) if h == n => std::future::pending::<()>().await,
            Behaviour::Pause(d) => tokio::time::sleep(d).await,
            Behaviour::PauseOn(p, d) if p == n => tokio::time::sleep(d).await,
            _ => {}
        }
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((id, ctx.subscriber().to_owned(), n));
        }
        Ok(())
    }
}

impl<S: Store> EventHandler<S, Ping> for Recorder {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<Ping>,
    ) -> Result<(), HandlerError> {
        self.on(ctx, event.id, event.payload.n).await
    }
}

impl<S: Store> EventHandler<S, Pong> for Recorder {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        event: Event<Pong>,
    ) -> Result<(), HandlerError> {
        self.on(ctx, event.id, event.payload.n).await
    }
}
