//! Which leading part of a received batch may be stored now without storing a message of
//! the partition before an older one that another batch holds (another process of the
//! service, or a delivery that was lost and is still outstanding).
//!
//! What the server says of the consumer that delivered the batch decides it
//! ([`Outstanding`]):
//! - when every outstanding delivery is in the batch, nothing older is anywhere else;
//! - otherwise the batch's first messages are the oldest outstanding ones when they are
//!   first deliveries numbered right after the acknowledgement floor (JetStream numbers a
//!   consumer's deliveries, and delivers new messages in stream order, and every delivery
//!   at or below the floor is acknowledged, that is stored).
//!
//! Anything else waits: the older batch is being stored and acknowledged, or it was lost,
//! and the partition loop rewinds the consumer if the wait lasts (see [`crate::consumer`];
//! a rewound consumer is a new one, so its numbers are never compared with the old one's).

/// Where a received message stands among the consumer's deliveries (from its reply subject).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delivery {
    /// The consumer's number for this delivery.
    pub(crate) consumer_sequence: u64,
    /// How many times the message was delivered, this one included.
    pub(crate) delivered: i64,
    /// The message's sequence in its stream.
    pub(crate) stream_sequence: u64,
}

impl Delivery {
    /// A message whose reply subject could not be read: never taken for the oldest.
    pub(crate) const UNKNOWN: Delivery = Delivery {
        consumer_sequence: 0,
        delivered: 0,
        stream_sequence: 0,
    };
}

/// What the server said of the consumer's deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outstanding {
    /// Deliveries not acknowledged yet, the batch's included.
    pub(crate) pending: usize,
    /// The acknowledgement floor: every delivery numbered up to it is acknowledged.
    pub(crate) floor: u64,
}

/// What to do with a held batch now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Store this many leading messages.
    Store(usize),
    /// Store nothing yet.
    Wait,
}

/// What to do now with `held`, a batch in delivery order, not acknowledged.
pub(crate) fn judge(held: &[Delivery], outstanding: Outstanding) -> Verdict {
    if held.is_empty() {
        return Verdict::Wait;
    }
    if outstanding.pending <= held.len() {
        return Verdict::Store(held.len());
    }
    match run_from(held, outstanding.floor.saturating_add(1)) {
        0 => Verdict::Wait,
        ready => Verdict::Store(ready),
    }
}

/// How many leading messages of `held` are first deliveries numbered `first`, `first + 1`, …
///
/// A process that stored deliveries up to `first - 1` (and whose acknowledgements the
/// server confirmed) may store such a run without asking the server: nothing was delivered
/// in between, so nothing older is outstanding anywhere.
pub(crate) fn run_from(held: &[Delivery], first: u64) -> usize {
    let mut next = Some(first);
    held.iter()
        .take_while(|delivery| {
            let continues = delivery.delivered == 1 && Some(delivery.consumer_sequence) == next;
            next = next.and_then(|n| n.checked_add(1));
            continues
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A first delivery numbered `consumer_sequence`, of stream sequence 100 more.
    fn first(consumer_sequence: u64) -> Delivery {
        Delivery {
            consumer_sequence,
            delivered: 1,
            stream_sequence: consumer_sequence + 100,
        }
    }

    fn now(pending: usize, floor: u64) -> Outstanding {
        Outstanding { pending, floor }
    }

    #[test]
    fn a_batch_holding_every_outstanding_delivery_is_stored_whole() {
        let redelivered = Delivery {
            consumer_sequence: 12,
            delivered: 3,
            stream_sequence: 40,
        };
        let held = [first(9), redelivered, Delivery::UNKNOWN];
        assert_eq!(judge(&held, now(3, 0)), Verdict::Store(3));
    }

    #[test]
    fn the_oldest_batch_is_stored_while_a_newer_one_waits() {
        let older = [first(11), first(12), first(13)];
        let newer = [first(14), first(15)];
        assert_eq!(judge(&older, now(5, 10)), Verdict::Store(3));
        assert_eq!(judge(&newer, now(5, 10)), Verdict::Wait);
        // Once the older batch is acknowledged, the floor reaches the newer one.
        assert_eq!(judge(&newer, now(2, 13)), Verdict::Store(2));
    }

    #[test]
    fn a_batch_after_lost_deliveries_waits() {
        // Deliveries 11 and 12 were lost with a pull; 13.. came to the next one.
        assert_eq!(judge(&[first(13), first(14)], now(4, 10)), Verdict::Wait);
    }

    #[test]
    fn only_the_run_of_first_deliveries_right_after_the_floor_is_stored() {
        let redelivered = Delivery {
            consumer_sequence: 13,
            delivered: 2,
            stream_sequence: 50,
        };
        let held = [first(11), first(12), redelivered, first(14)];
        assert_eq!(judge(&held, now(6, 10)), Verdict::Store(2));
        assert_eq!(
            judge(&[first(11), first(13)], now(6, 10)),
            Verdict::Store(1)
        );
        assert_eq!(judge(&[Delivery::UNKNOWN], now(6, 10)), Verdict::Wait);
        assert_eq!(judge(&[], now(6, 10)), Verdict::Wait);
    }

    #[test]
    fn a_run_right_after_this_process_last_stored_delivery_needs_no_question() {
        assert_eq!(run_from(&[first(21), first(22), first(23)], 21), 3);
        // Something was delivered in between (to another process, or lost).
        assert_eq!(run_from(&[first(22), first(23)], 21), 0);
        let redelivered = Delivery {
            consumer_sequence: 22,
            delivered: 2,
            stream_sequence: 9,
        };
        assert_eq!(run_from(&[first(21), redelivered], 21), 1);
        // Numbers from the broker at the very end of the range do not overflow.
        let last = Delivery {
            consumer_sequence: u64::MAX,
            delivered: 1,
            stream_sequence: 1,
        };
        assert_eq!(run_from(&[last, last], u64::MAX), 1);
    }
}
