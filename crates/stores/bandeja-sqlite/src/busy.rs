//! Waiting for SQLite's write lock without SQLite's own busy handler.
//!
//! SQLite lets one writer at a time. A connection that finds the write lock taken calls its
//! busy handler and tries again when the handler returns. The stock handler
//! (`sqlite3_busy_timeout`) sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50 then 100 ms
//! between tries, whether or not the lock came free meanwhile: with the workers and the
//! application writing small transactions of a millisecond or less, most of a writer's time
//! went to those sleeps (a drain of 20,000 messages waited 22 s in them, summed over the
//! connections, in 5.6 s of wall time), and a commit → handled latency's p99 was 113 ms.
//!
//! Here, every connection of a [`SqliteStore::connect`](crate::SqliteStore::connect) pool
//! gets
//!
//! - a **WAL hook**, which SQLite calls right after a commit has released the write lock:
//!   it wakes every connection of this process waiting for the lock (and runs the
//!   auto-checkpoint SQLite's default WAL hook would have run, at the same 1,000 pages);
//! - a **busy handler** that waits for that wake-up, or [`POLL`] at most (a writer of
//!   another process, or a rollback, wakes no one; 5 ms once it has tried 50 times), then
//!   tries again; it gives up after
//!   [`TIMEOUT`], as the stock one configured with the same timeout would.
//!
//! ([`writing`] also reads a connection's transaction state, for the transaction marks.)
//!
//! Both run on the connection's own thread (sqlx gives every SQLite connection one), so
//! the wait blocks that connection only, as SQLite's own sleeps do.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use libsqlite3_sys as ffi;
use sqlx::sqlite::SqliteConnection;

/// How long a connection waits for the write lock before its statement fails with
/// `SQLITE_BUSY` (a transient error: the worker tries again later).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// The longest a waiting connection sleeps between two tries when no commit of this process
/// woke it (the lock may be held by another process, or released by a rollback).
pub(crate) const POLL: Duration = Duration::from_millis(1);

/// The same after [`PATIENT_TRIES`] tries: a long wait (another process's long
/// transaction) then costs a wake-up every 5 ms, not every millisecond.
const POLL_SLOW: Duration = Duration::from_millis(5);

/// Tries after which a wait polls at [`POLL_SLOW`].
const PATIENT_TRIES: c_int = 50;

/// The WAL size, in pages, after which a commit checkpoints (SQLite's default).
const AUTOCHECKPOINT_PAGES: c_int = 1000;

/// Commits of this process so far, and the condition variable their waiters wait on.
static RELEASES: (Mutex<u64>, Condvar) = (Mutex::new(0), Condvar::new());

thread_local! {
    /// On a connection's thread: the commits it had seen when it last tried, and when its
    /// current wait began.
    static WAITING: Cell<(u64, Option<Instant>)> = const { Cell::new((0, None)) };
}

/// Installs the WAL hook and the busy handler on `conn` (see the module documentation).
pub(crate) async fn install(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    let mut handle = conn.lock_handle().await?;
    let db = handle.as_raw_handle().as_ptr();
    // SAFETY: `db` is the open connection `handle` keeps locked for this call; both
    // callbacks are plain functions that take no user data (null), so nothing they point
    // to can outlive the connection.
    let code = unsafe {
        ffi::sqlite3_wal_hook(db, Some(on_commit), std::ptr::null_mut());
        ffi::sqlite3_busy_handler(db, Some(on_busy), std::ptr::null_mut())
    };
    if code == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(sqlx::Error::Protocol(format!(
            "could not install the SQLite busy handler (code {code})"
        )))
    }
}

/// SQLite's WAL hook: a commit just released the write lock.
unsafe extern "C" fn on_commit(
    _data: *mut c_void,
    db: *mut ffi::sqlite3,
    name: *const c_char,
    pages: c_int,
) -> c_int {
    // The waiters first: the checkpoint below does I/O they need not wait for.
    let (commits, waiters) = &RELEASES;
    if let Ok(mut commits) = commits.lock() {
        *commits = commits.wrapping_add(1);
    }
    waiters.notify_all();
    if pages >= AUTOCHECKPOINT_PAGES {
        // SAFETY: SQLite passes the connection and the database name of the commit; a
        // passive checkpoint from the WAL hook is what its default hook does. Its result is
        // ignored as the default hook ignores it (a busy checkpoint is retried next time).
        unsafe {
            ffi::sqlite3_wal_checkpoint(db, name);
        }
    }
    ffi::SQLITE_OK
}

/// SQLite's busy handler: non-zero to try again, zero to give up (`SQLITE_BUSY`).
unsafe extern "C" fn on_busy(_data: *mut c_void, tries: c_int) -> c_int {
    let (seen, began) = WAITING.with(Cell::get);
    let began = match began {
        Some(began) if tries > 0 => began,
        _ => Instant::now(),
    };
    if began.elapsed() >= TIMEOUT {
        WAITING.with(|w| w.set((seen, None)));
        return 0;
    }
    let (commits, waiters) = &RELEASES;
    let now_seen = match commits.lock() {
        // A commit since this connection last tried: the lock may be free, try at once.
        Ok(count) if *count != seen => *count,
        Ok(count) => match waiters.wait_timeout(
            count,
            if tries < PATIENT_TRIES {
                POLL
            } else {
                POLL_SLOW
            },
        ) {
            Ok((count, _)) => *count,
            Err(_) => seen,
        },
        Err(_) => {
            std::thread::sleep(POLL);
            seen
        }
    };
    WAITING.with(|w| w.set((now_seen, Some(began))));
    1
}

/// Whether the transaction open on `conn` has written (holds SQLite's write lock).
pub(crate) async fn writing(conn: &mut SqliteConnection) -> Result<bool, sqlx::Error> {
    let mut handle = conn.lock_handle().await?;
    let db = handle.as_raw_handle().as_ptr();
    // SAFETY: `db` is the open connection `handle` keeps locked for this call; a null
    // schema asks for the highest state over all of the connection's schemas.
    let state = unsafe { ffi::sqlite3_txn_state(db, std::ptr::null()) };
    Ok(state == ffi::SQLITE_TXN_WRITE)
}
