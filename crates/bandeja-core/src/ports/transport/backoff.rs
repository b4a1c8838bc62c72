//! [`Backoff`]: the pauses a transport takes between reconnection attempts to its broker.

use std::time::Duration;

/// The first pause of a [`Backoff`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// Exponential backoff between attempts: [`FIRST_BACKOFF`] doubling up to a maximum.
#[derive(Debug)]
pub struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    /// A backoff starting at [`FIRST_BACKOFF`], never above `max`.
    #[must_use]
    pub fn new(max: Duration) -> Self {
        Backoff {
            next: FIRST_BACKOFF.min(max),
            max,
        }
    }

    /// The pause to take now (the next one is twice as long).
    // Not `Iterator::next`: a backoff never ends, so an `Option` would only be unwrapped.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        pause
    }

    /// Back to the first pause after a success.
    pub fn reset(&mut self) {
        self.next = FIRST_BACKOFF.min(self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let mut backoff = Backoff::new(Duration::from_millis(500));
        let pauses: Vec<u128> = (0..5).map(|_| backoff.next().as_millis()).collect();
        assert_eq!(pauses, [100, 200, 400, 500, 500]);
        backoff.reset();
        assert_eq!(backoff.next(), FIRST_BACKOFF);
    }
}
