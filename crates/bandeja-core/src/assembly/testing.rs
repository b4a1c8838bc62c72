//! Test harness in the shape of Spring Modulith's `Scenario`: stimulate the system with an
//! event or command, wait until a state-reading closure satisfies a predicate (with a
//! timeout, never a fixed sleep), then verify.
//!
//! ```no_run
//! # use bandeja_core::{testing::Scenario, Bandeja, Event, Payload, Store};
//! # #[derive(serde::Serialize, serde::Deserialize)] struct OrderConfirmed { order_id: i64 }
//! # impl Payload for OrderConfirmed { const TYPE: &'static str = "shop.OrderConfirmed"; }
//! # async fn stock_of(_: &str) -> i64 { 0 }
//! # async fn demo<S: Store>(bandeja: Bandeja<S>) -> Result<(), Box<dyn std::error::Error>> {
//! let before = stock_of("MS-001").await;
//! Scenario::new(&bandeja)
//!     .publish(Event::new("Order", "42", OrderConfirmed { order_id: 42 }))
//!     .await?
//!     .and_wait_for_state_change(|| stock_of("MS-001"), |stock| *stock != before)
//!     .await?
//!     .and_verify(|stock| assert_eq!(*stock, before - 3));
//! # Ok(()) }
//! ```

use std::future::Future;
use std::time::{Duration, Instant};

use crate::envelope::{Command, Event, Payload};
use crate::error::Result;
use crate::runtime::Bandeja;
use crate::store::Store;

/// The state did not change within the timeout.
#[derive(Debug, thiserror::Error)]
#[error("the state did not reach the expected condition within {waited:?}; last value: {last}")]
pub struct TimedOut {
    /// How long it waited.
    pub waited: Duration,
    /// `Debug` of the last value read.
    pub last: String,
}

/// Waits until `check` returns `Some`, reading it every few milliseconds, for at most `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, mut check: F) -> Result<T, TimedOut>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if start.elapsed() >= timeout {
            return Err(TimedOut {
                waited: start.elapsed(),
                last: "condition never held".into(),
            });
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// A test scenario on a running [`Bandeja`].
pub struct Scenario<S: Store> {
    bandeja: Bandeja<S>,
    timeout: Duration,
}

impl<S: Store> Scenario<S> {
    /// A scenario with a 10 s timeout.
    pub fn new(bandeja: &Bandeja<S>) -> Self {
        Scenario {
            bandeja: bandeja.clone(),
            timeout: Duration::from_secs(10),
        }
    }

    /// How long to wait for a state change (default 10 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Emits `event` as if another module had published it.
    pub async fn publish<T: Payload>(&self, event: Event<T>) -> Result<Stimulated<'_, S>> {
        self.bandeja.emit(&event).await?;
        Ok(Stimulated { scenario: self })
    }

    /// Sends `command` as if another service had sent it.
    pub async fn send<T: Payload>(&self, command: Command<T>) -> Result<Stimulated<'_, S>> {
        self.bandeja.send(&command).await?;
        Ok(Stimulated { scenario: self })
    }

    /// Runs any stimulus (an HTTP call, a use case).
    pub async fn stimulate<F: Future>(&self, stimulus: F) -> Stimulated<'_, S> {
        stimulus.await;
        Stimulated { scenario: self }
    }
}

/// A scenario after its stimulus.
pub struct Stimulated<'a, S: Store> {
    scenario: &'a Scenario<S>,
}

impl<S: Store> Stimulated<'_, S> {
    /// Waits until `state()` returns a value for which `changed` is true.
    pub async fn and_wait_for_state_change<T, F, Fut, P>(
        self,
        mut state: F,
        mut changed: P,
    ) -> Result<StateChanged<T>, TimedOut>
    where
        T: std::fmt::Debug,
        F: FnMut() -> Fut,
        Fut: Future<Output = T>,
        P: FnMut(&T) -> bool,
    {
        let start = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            let value = state().await;
            if changed(&value) {
                return Ok(StateChanged { value });
            }
            if start.elapsed() >= self.scenario.timeout {
                return Err(TimedOut {
                    waited: start.elapsed(),
                    last: format!("{value:?}"),
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    /// Waits until `state()` returns a value that counts as changed without a predicate:
    /// `true`, `Some(_)`, or a non-empty collection ([`Settled`]).
    pub async fn and_wait_for<T, F, Fut>(self, state: F) -> Result<StateChanged<T>, TimedOut>
    where
        T: Settled + std::fmt::Debug,
        F: FnMut() -> Fut,
        Fut: Future<Output = T>,
    {
        self.and_wait_for_state_change(state, Settled::is_settled)
            .await
    }
}

/// A value that says by itself whether a wait is over.
pub trait Settled {
    /// Whether the wait is over.
    fn is_settled(&self) -> bool;
}

impl Settled for bool {
    fn is_settled(&self) -> bool {
        *self
    }
}

impl<T> Settled for Option<T> {
    fn is_settled(&self) -> bool {
        self.is_some()
    }
}

impl<T> Settled for Vec<T> {
    fn is_settled(&self) -> bool {
        !self.is_empty()
    }
}

/// The state that satisfied the wait.
#[derive(Debug)]
pub struct StateChanged<T> {
    value: T,
}

impl<T> StateChanged<T> {
    /// Runs assertions on the value and returns it.
    pub fn and_verify(self, verify: impl FnOnce(&T)) -> T {
        verify(&self.value);
        self.value
    }

    /// The value.
    pub fn into_inner(self) -> T {
        self.value
    }
}
