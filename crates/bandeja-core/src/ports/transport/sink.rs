//! The callback a transport feeds received messages to: the reception stage implements it,
//! storing each body in the inbox before the transport acknowledges the broker.

use async_trait::async_trait;

use crate::error::Result;
use crate::record::MessageKind;
use crate::store::ReceiveReport;

/// Where a transport hands received messages.
#[async_trait]
pub trait InboxSink: Send + Sync {
    /// Stores received bodies (in the [`wire`](crate::transport::wire) format) in one transaction, in order. When
    /// this returns `Ok` the transport may acknowledge all of them; on `Err` none is stored.
    async fn accept(&self, kind: MessageKind, bodies: &[&[u8]]) -> Result<ReceiveReport>;

    /// The addresses this service consumes as the database knows them now: the event types
    /// it has subscriptions for (registered by any of its processes, this one or another
    /// version), or its command topic. A transport that receives messages of several
    /// addresses on one consumer asks before it acknowledges one it believes is not this
    /// service's, so a type a newer process subscribed to is stored, never dropped.
    /// Default: `None` (unknown: the transport keeps its subscribed addresses).
    async fn addresses(&self, kind: MessageKind) -> Result<Option<Vec<String>>> {
        let _ = kind;
        Ok(None)
    }
}
