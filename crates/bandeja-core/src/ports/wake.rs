//! Wake-up signals: a box's worker sleeps until its polling interval passes or a commit
//! that added rows to its box signals it, whichever comes first. Signals coalesce: many
//! commits while a worker is busy count as one.

use std::sync::Arc;

use tokio::sync::watch;

use crate::record::BoxKind;

/// One signal per box.
#[derive(Debug, Clone)]
pub struct Wakers {
    senders: Arc<[watch::Sender<u64>; 4]>,
}

impl Default for Wakers {
    fn default() -> Self {
        Wakers {
            senders: Arc::new(std::array::from_fn(|_| watch::Sender::new(0))),
        }
    }
}

impl Wakers {
    /// New, unsignalled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Signals the worker of `box_kind` that rows were committed.
    pub fn wake(&self, box_kind: BoxKind) {
        self.senders[box_kind.index()].send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver whose `changed()` resolves after the next [`Wakers::wake`].
    pub fn subscribe(&self, box_kind: BoxKind) -> watch::Receiver<u64> {
        self.senders[box_kind.index()].subscribe()
    }
}
