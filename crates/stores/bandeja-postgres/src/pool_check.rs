//! How the store's pools check a connection before lending it: only one that sat idle.
//!
//! sqlx pings every connection it takes from the idle queue by default (a round trip
//! before each transaction, claim or relay), on top of the ping it makes when a connection
//! is given back. In a busy pool a connection is lent again within milliseconds of that
//! second ping, so the first one only adds a round trip to every step of a message's way
//! (four on the in-process path: the emitting transaction, the relay, the claim, the
//! handlers' transaction). A connection that sat idle longer than [`IDLE_BEFORE_PING`] is
//! still pinged, so one that a server restart or an idle timeout closed meanwhile is
//! replaced instead of failing its first statement (sqlx logs that at WARN, "error from
//! `before_acquire`", and opens a new connection). One given back less than a second
//! before a restart is lent unchecked: its next statement fails once, with a transient
//! error that the workers retry (a claim, a batch released) or the caller sees (an `emit`).

use std::time::Duration;

use sqlx::postgres::PgPoolOptions;

/// How long a connection may sit idle and still be lent without a ping.
pub(crate) const IDLE_BEFORE_PING: Duration = Duration::from_secs(1);

/// Pool options whose connections are pinged before being lent only when they sat idle
/// longer than [`IDLE_BEFORE_PING`].
pub(crate) fn pool_options() -> PgPoolOptions {
    PgPoolOptions::new()
        .test_before_acquire(false)
        .before_acquire(|connection, meta| {
            Box::pin(async move {
                if meta.idle_for > IDLE_BEFORE_PING {
                    sqlx::Connection::ping(connection).await?;
                }
                Ok(true)
            })
        })
}
