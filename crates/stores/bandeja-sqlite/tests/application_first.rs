//! An application writer waiting for SQLite's write lock beside bandeja's workers gets it
//! before them. (A test binary of its own: the wake-ups are process-wide, so another
//! database's commits in the same process would count as frees of this one's lock.)

use std::time::Duration;

use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use bandeja_core::Store;
use bandeja_sqlite::SqliteStore;

async fn fresh_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-sqlite-application-first", SqliteStore::connect).await
}

/// How long the worker holding the lock holds it; the application's writer arrives halfway.
const HELD: Duration = Duration::from_millis(240);

/// Workers queued for the lock before the application's writer arrives.
const QUEUED_WORKERS: usize = 4;

/// An order placed during a drain waits for the one transaction holding the lock, not for
/// every worker queued behind it: the application's writer, arriving last, writes right
/// after the holder, and the workers all get the lock after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_writer_goes_before_the_workers_queued_ahead_of_it() {
    let (store, _dir) = fresh_store().await;
    sqlx::query("CREATE TABLE w (n INTEGER PRIMARY KEY AUTOINCREMENT, who TEXT NOT NULL)")
        .execute(store.pool())
        .await
        .expect("create a table");
    for round in 0..3 {
        // A worker's transaction (the handlers' kind) holds the lock.
        let mut holder = Store::begin(&store).await.expect("a worker's transaction");
        sqlx::query("INSERT INTO w (who) VALUES ('holder')")
            .execute(&mut *holder)
            .await
            .expect("the holder writes");
        let workers: Vec<_> = (0..QUEUED_WORKERS)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move {
                    let mut tx = Store::begin(&store).await.expect("a worker's transaction");
                    sqlx::query("INSERT INTO w (who) VALUES ('worker')")
                        .execute(&mut *tx)
                        .await
                        .expect("a queued worker writes");
                    tx.commit().await.expect("a queued worker commits");
                })
            })
            .collect();
        // The workers queue up first; the application's writer comes later.
        tokio::time::sleep(HELD / 2).await;
        let application = {
            let store = store.clone();
            tokio::spawn(async move {
                let mut tx = store
                    .pool()
                    .begin_with("BEGIN IMMEDIATE")
                    .await
                    .expect("the application's writer");
                sqlx::query("INSERT INTO w (who) VALUES ('application')")
                    .execute(&mut *tx)
                    .await
                    .expect("the application writes");
                tx.commit().await.expect("the application commits");
            })
        };
        tokio::time::sleep(HELD / 2).await;
        holder.commit().await.expect("the holder commits");
        application.await.expect("the application's writer");
        for worker in workers {
            worker.await.expect("a queued worker");
        }
        let order: Vec<String> = sqlx::query_scalar("SELECT who FROM w ORDER BY n")
            .fetch_all(store.pool())
            .await
            .expect("read the order of the writes");
        let this_round = &order[order.len() - (QUEUED_WORKERS + 2)..];
        assert_eq!(
            this_round[..2],
            ["holder".to_owned(), "application".to_owned()],
            "round {round}: the application's write came right after the holder's ({this_round:?})"
        );
    }
}
