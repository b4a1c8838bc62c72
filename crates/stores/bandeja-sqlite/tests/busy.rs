//! A connection waiting for SQLite's write lock gets it as soon as the holder commits,
//! not at the next step of SQLite's own sleep schedule (which, 240 ms into a wait, next
//! tries 88 ms after such a commit).

use std::time::{Duration, Instant};

use bandeja_conformance::fixtures::{sqlite_temp, TempDir};
use bandeja_sqlite::SqliteStore;

async fn fresh_store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-sqlite-busy", SqliteStore::connect).await
}

/// How long the first writer holds the lock.
const HELD: Duration = Duration::from_millis(240);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_writer_starts_right_after_the_holder_commits() {
    let (store, _dir) = fresh_store().await;
    sqlx::query("CREATE TABLE t (n INTEGER)")
        .execute(store.pool())
        .await
        .expect("create a table");
    for round in 0..3 {
        let mut holder = store
            .pool()
            .begin_with("BEGIN IMMEDIATE")
            .await
            .expect("the first writer");
        sqlx::query("INSERT INTO t VALUES (1)")
            .execute(&mut *holder)
            .await
            .expect("write");
        let waiter = {
            let store = store.clone();
            tokio::spawn(async move {
                let mut tx = store
                    .pool()
                    .begin_with("BEGIN IMMEDIATE")
                    .await
                    .expect("the second writer gets the lock");
                let got = Instant::now();
                sqlx::query("INSERT INTO t VALUES (2)")
                    .execute(&mut *tx)
                    .await
                    .expect("write");
                tx.commit().await.expect("commit");
                got
            })
        };
        tokio::time::sleep(HELD).await;
        holder.commit().await.expect("commit the first writer");
        let committed = Instant::now();
        let got = waiter.await.expect("the waiter");
        let late = got.saturating_duration_since(committed);
        assert!(
            late < Duration::from_millis(50),
            "round {round}: the waiting writer got the lock {late:?} after the commit"
        );
    }
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
        .fetch_one(store.pool())
        .await
        .expect("count");
    assert_eq!(rows, 6);
}
