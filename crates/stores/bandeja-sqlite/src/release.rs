//! What becomes of a connection coming back to the pool still counted inside a
//! transaction.
//!
//! sqlx counts the transactions it opened on each SQLite connection and ends a dropped
//! [`Transaction`](sqlx::Transaction) with a `ROLLBACK` that does not lower the count when
//! it fails. A handler that runs `COMMIT` or `ROLLBACK` on its batch's connection itself
//! makes that `ROLLBACK` fail ("no transaction is active"), so the connection returns to the
//! pool counted as inside a transaction it is not in. Reused, its next `BEGIN IMMEDIATE`
//! is refused by sqlx (a custom `BEGIN` inside a transaction) — a claim or an outcome write
//! that fails, leaving rows PROCESSING until their lease runs out — and a plain `begin`
//! only opens a savepoint. Such a connection is closed instead of being reused.

use sqlx::sqlite::SqliteConnection;
use sqlx::Connection;

/// Whether `conn` may go back to the pool: `false` (close it) when sqlx still counts it
/// inside a transaction once the commands queued on it (a dropped transaction's
/// `ROLLBACK`) have run. [`SqliteStore::connect`](crate::SqliteStore::connect) installs it;
/// a pool of your own for [`SqliteStore::from_pool`](crate::SqliteStore::from_pool) should
/// too: `.after_release(|conn, _| Box::pin(bandeja_sqlite::reusable_connection(conn)))`.
pub async fn reusable_connection(conn: &mut SqliteConnection) -> Result<bool, sqlx::Error> {
    if !conn.is_in_transaction() {
        return Ok(true);
    }
    // The count is read without waiting for the connection's thread: a round trip first
    // lets a dropped transaction's `ROLLBACK`, queued before it, lower the count.
    conn.ping().await?;
    if conn.is_in_transaction() {
        tracing::warn!(
            "a SQLite connection came back to the pool counted inside a transaction (a handler \
             ran COMMIT or ROLLBACK on its connection itself?): closed instead of reused"
        );
        return Ok(false);
    }
    Ok(true)
}
