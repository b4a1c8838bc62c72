//! The bound on transient conflicts: an attempt that hit a lock or snapshot conflict, or
//! lost its connection ([`Store::is_transient`](crate::Store::is_transient)), is tried
//! again without spending one of the message's retries, but only [`FREE_CONFLICTS`] times
//! in a row in this process; the next one is counted as a failed attempt, so a handler
//! that always conflicts still ends FAILED instead of looping.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::envelope::MessageId;
use crate::record::{BoxKind, StoredMessage};

/// Transient conflicts of one row tried again for free, in a row, per process.
pub(crate) const FREE_CONFLICTS: u32 = 5;

/// Rows remembered at most; past it the memory starts over (a bound, not a cache).
const REMEMBERED: usize = 10_000;

type Key = (BoxKind, MessageId, Option<String>);

/// Transient conflicts per row, in a row.
#[derive(Default)]
pub(crate) struct Conflicts {
    rows: Mutex<HashMap<Key, u32>>,
}

impl Conflicts {
    /// Counts one more conflict of `message`. Returns whether it is still free (not
    /// spending a retry); once it is not, the count starts over.
    pub(crate) fn free(&self, message: &StoredMessage) -> bool {
        let Ok(mut rows) = self.rows.lock() else {
            return false;
        };
        if rows.len() >= REMEMBERED {
            rows.clear();
        }
        let key = (
            message.box_kind,
            message.record.id,
            message.subscriber.clone(),
        );
        let count = rows.entry(key.clone()).or_insert(0);
        *count += 1;
        if *count > FREE_CONFLICTS {
            rows.remove(&key);
            return false;
        }
        true
    }

    /// Forgets `message`'s conflicts (its attempt ended otherwise).
    pub(crate) fn forget(&self, message: &StoredMessage) {
        let Ok(mut rows) = self.rows.lock() else {
            return;
        };
        if rows.is_empty() {
            return;
        }
        rows.remove(&(
            message.box_kind,
            message.record.id,
            message.subscriber.clone(),
        ));
    }
}
