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
//!
//! **The application's writes go first.** The store opens two pools on the file: the
//! application's ([`SqliteStore::pool`](crate::SqliteStore::pool), [`Role::Application`])
//! and its workers' ([`Role::Workers`]: claims, relays, outcome writes, the handlers'
//! transactions). While an application connection waits for the lock, a worker connection
//! waiting too lets it go first (it does not try again until the application's writer has
//! committed, [`GIVE_WAY_AT_MOST`] at most), and a worker about to begin a transaction
//! waits the same way first ([`give_way`]). So an order placed during a drain waits for the
//! one transaction that holds the lock, not for every worker that was queued behind it.
//! An application writer counts as waiting from its first busy call until its connection
//! commits (or stops waiting: a timeout; a rollback once it held the lock is forgotten
//! [`FORGET_AFTER`] after its last busy call).
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
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

/// The WAL size, in pages, after which a worker's commit checkpoints (SQLite's default).
const AUTOCHECKPOINT_PAGES: c_int = 1000;

/// The same for an application connection's commit: ten times more, so that the
/// checkpoint's copy and sync fall to the workers' commits (the application's commit
/// returns without them) while the WAL still stays bounded when only the application
/// writes.
const APPLICATION_CHECKPOINT_PAGES: c_int = 10 * AUTOCHECKPOINT_PAGES;

/// Commits of this process so far, and the condition variable their waiters wait on.
static RELEASES: (Mutex<u64>, Condvar) = (Mutex::new(0), Condvar::new());

/// The longest a worker's wait for the lock, or a worker's transaction about to begin,
/// lets waiting application writers go first: a stream of application writes slows the
/// workers down, it does not stop them.
pub(crate) const GIVE_WAY_AT_MOST: Duration = Duration::from_millis(100);

/// How long after its last busy call an application writer still counts as waiting when
/// its connection has not committed since (it got the lock, then rolled back).
pub(crate) const FORGET_AFTER: Duration = Duration::from_millis(50);

/// Whose transactions a connection carries (the busy handler's user data: null for the
/// application's, non-null for the workers').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The application's own transactions (the store's public pool).
    Application,
    /// bandeja's workers: they give way to a waiting application writer.
    Workers,
}

/// Application connections waiting for the write lock (or holding it after a wait, until
/// they commit).
static APPLICATION_WAITING: AtomicUsize = AtomicUsize::new(0);

/// When an application connection last called its busy handler, in microseconds since
/// [`epoch`].
static APPLICATION_WAITED_AT: AtomicU64 = AtomicU64::new(0);

/// The instant [`APPLICATION_WAITED_AT`] counts from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn micros_since_epoch() -> u64 {
    u64::try_from(epoch().elapsed().as_micros()).unwrap_or(u64::MAX)
}

thread_local! {
    /// On a connection's thread: the commits it had seen when it last tried, when its
    /// current wait began, and how long it has given way to the application in that wait.
    static WAITING: Cell<(u64, Option<Instant>, Duration)> =
        const { Cell::new((0, None, Duration::ZERO)) };
    /// On an application connection's thread: whether it is counted in
    /// [`APPLICATION_WAITING`] (uncounted when the thread ends with its connection).
    static COUNTED: Counted = const { Counted(Cell::new(false)) };
}

/// Whether a connection's thread is counted as a waiting application writer; a connection
/// closed while counted is uncounted as its thread ends.
struct Counted(Cell<bool>);

impl Drop for Counted {
    fn drop(&mut self) {
        if self.0.get() {
            APPLICATION_WAITING.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Whether an application writer is waiting for the lock (see the module documentation).
pub(crate) fn application_waiting() -> bool {
    APPLICATION_WAITING.load(Ordering::Acquire) > 0
        && micros_since_epoch().saturating_sub(APPLICATION_WAITED_AT.load(Ordering::Acquire))
            < u64::try_from(FORGET_AFTER.as_micros()).unwrap_or(u64::MAX)
}

/// Before a worker's transaction: waits while an application writer waits for the lock,
/// [`GIVE_WAY_AT_MOST`] at most, so it does not take the lock the application's writer is
/// about to get.
pub(crate) async fn give_way() {
    if !application_waiting() {
        return;
    }
    let deadline = tokio::time::Instant::now() + GIVE_WAY_AT_MOST;
    while application_waiting() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
    }
}

/// Counts this (application) connection's thread as waiting, once per wait.
fn count_application_wait() {
    APPLICATION_WAITED_AT.store(micros_since_epoch(), Ordering::Release);
    if !COUNTED.with(|c| c.0.get()) {
        COUNTED.with(|c| c.0.set(true));
        APPLICATION_WAITING.fetch_add(1, Ordering::AcqRel);
    }
}

/// Uncounts this connection's thread if it was counted as a waiting application writer.
fn uncount_application_wait() {
    if COUNTED.with(|c| c.0.get()) {
        COUNTED.with(|c| c.0.set(false));
        APPLICATION_WAITING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The busy handler's user data for `role`: a marker value, never dereferenced.
fn role_data(role: Role) -> *mut c_void {
    match role {
        Role::Application => std::ptr::null_mut(),
        // Any non-null value: it is compared with null, never read through.
        Role::Workers => std::ptr::NonNull::<c_void>::dangling().as_ptr(),
    }
}

/// Installs the WAL hook and the busy handler on `conn`, a connection of `role`'s pool
/// (see the module documentation).
pub(crate) async fn install(conn: &mut SqliteConnection, role: Role) -> Result<(), sqlx::Error> {
    let mut handle = conn.lock_handle().await?;
    let db = handle.as_raw_handle().as_ptr();
    // SAFETY: `db` is the open connection `handle` keeps locked for this call; both
    // callbacks are plain functions whose user data is a marker compared with null, never
    // dereferenced, so nothing they point to can outlive the connection.
    let code = unsafe {
        ffi::sqlite3_wal_hook(db, Some(on_commit), role_data(role));
        ffi::sqlite3_busy_handler(db, Some(on_busy), role_data(role))
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
    data: *mut c_void,
    db: *mut ffi::sqlite3,
    name: *const c_char,
    pages: c_int,
) -> c_int {
    // An application writer that waited has its lock's work committed: the workers may
    // go again. Then the waiters: the checkpoint below does I/O they need not wait for.
    uncount_application_wait();
    let (commits, waiters) = &RELEASES;
    if let Ok(mut commits) = commits.lock() {
        *commits = commits.wrapping_add(1);
    }
    waiters.notify_all();
    let threshold = if data.is_null() {
        APPLICATION_CHECKPOINT_PAGES
    } else {
        AUTOCHECKPOINT_PAGES
    };
    if pages >= threshold {
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
unsafe extern "C" fn on_busy(data: *mut c_void, tries: c_int) -> c_int {
    let role = if data.is_null() {
        Role::Application
    } else {
        Role::Workers
    };
    let (seen, began, gave_way) = WAITING.with(Cell::get);
    let (began, mut gave_way) = match began {
        Some(began) if tries > 0 => (began, gave_way),
        _ => (Instant::now(), Duration::ZERO),
    };
    if began.elapsed() >= TIMEOUT {
        WAITING.with(|w| w.set((seen, None, Duration::ZERO)));
        if role == Role::Application {
            uncount_application_wait();
        }
        return 0;
    }
    let poll = if tries < PATIENT_TRIES || role == Role::Application {
        POLL
    } else {
        POLL_SLOW
    };
    if role == Role::Application {
        count_application_wait();
    }
    let (commits, waiters) = &RELEASES;
    let mut now_seen = match commits.lock() {
        // A commit since this connection last tried: the lock may be free, try at once.
        Ok(count) if *count != seen => *count,
        Ok(count) => match waiters.wait_timeout(count, poll) {
            Ok((count, _)) => *count,
            Err(_) => seen,
        },
        Err(_) => {
            std::thread::sleep(POLL);
            seen
        }
    };
    // A worker lets a waiting application writer take the lock first: it waits for the
    // commits until that writer has committed. What counts against its give-way time is
    // only the time since a commit of this process freed the lock (while the lock is held
    // it could not have taken it anyway).
    if role == Role::Workers && gave_way < GIVE_WAY_AT_MOST {
        let mut freed = (now_seen != seen).then(Instant::now);
        while application_waiting()
            && began.elapsed() < TIMEOUT
            && freed.is_none_or(|freed| gave_way + freed.elapsed() < GIVE_WAY_AT_MOST)
        {
            let before = now_seen;
            now_seen = match commits.lock() {
                Ok(count) => match waiters.wait_timeout(count, POLL) {
                    Ok((count, _)) => *count,
                    Err(_) => now_seen,
                },
                Err(_) => {
                    std::thread::sleep(POLL);
                    now_seen
                }
            };
            if now_seen != before && freed.is_none() {
                freed = Some(Instant::now());
            }
        }
        if let Some(freed) = freed {
            gave_way += freed.elapsed();
        }
    }
    WAITING.with(|w| w.set((now_seen, Some(began), gave_way)));
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
