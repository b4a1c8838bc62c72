//! How the store uses its connections: a busy connection is lent again without a ping, one
//! that sat idle is checked first (so a connection the server closed meanwhile is replaced,
//! not handed to a worker), and a batch's transaction mark comes with its first savepoint.

mod common;

use std::time::{Duration, Instant};

use bandeja_core::testing::eventually;
use bandeja_core::Store;
use bandeja_postgres::sqlx::{self, PgPool};
use bandeja_postgres::{PgStore, PgStoreOptions};

/// Longer than the store's idle time after which a connection is pinged before it is lent.
const IDLE_PAST_THE_PING: Duration = Duration::from_millis(1_300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_the_server_closed_while_it_sat_idle_is_replaced_before_it_is_lent() {
    let Some(guard) = bandeja_postgres::testing::fresh_schema("bandeja_t").await else {
        return;
    };
    let url = common::database_url();
    let options = PgStoreOptions {
        max_connections: 1,
        ..PgStoreOptions::with_schema(guard.schema())
    };
    let store = PgStore::connect_with_options(&url, &options)
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(store.pool())
        .await
        .expect("the pool's backend");
    // Given back (after sqlx's ping on release) and idle: from here its idle time counts.
    let idle = || (store.pool().size() == 1 && store.pool().num_idle() == 1).then_some(());
    eventually(Duration::from_secs(10), || async { idle() })
        .await
        .expect("the pool's connection is back in the pool");
    let last_use = Instant::now();

    // What a server restart or an idle timeout does to the pool's one connection.
    let admin = PgPool::connect(&url).await.expect("connect");
    let terminated: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(&admin)
        .await
        .expect("terminate the pool's backend");
    assert!(terminated, "the pool's backend {pid} was not terminated");
    eventually(Duration::from_secs(10), || {
        let admin = admin.clone();
        async move {
            let left: i64 =
                sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = $1")
                    .bind(pid)
                    .fetch_one(&admin)
                    .await
                    .ok()?;
            (left == 0).then_some(())
        }
    })
    .await
    .expect("the terminated backend is gone");
    // The check is made only for a connection idle past the store's threshold.
    tokio::time::sleep_until((last_use + IDLE_PAST_THE_PING).into()).await;
    assert_eq!(
        idle(),
        Some(()),
        "the closed connection still sits in the pool, to be lent"
    );

    let mut tx = store
        .begin()
        .await
        .expect("a transaction on a live connection");
    let now: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *tx)
        .await
        .expect("the first statement after the server closed the idle connection succeeds");
    assert_ne!(now, pid, "a new connection replaced the closed one");
    store.commit(tx).await.expect("commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mark_of_a_batch_transaction_comes_with_its_first_savepoint() {
    let Some((store, _guard)) = common::try_fresh_store().await else {
        return;
    };
    let (mut tx, mark) = marked(&store).await;
    let own: i64 = sqlx::query_scalar("SELECT txid_current()")
        .fetch_one(&mut *tx)
        .await
        .expect("txid");
    assert_eq!(mark, own, "the mark is the transaction's own id");
    sqlx::query("RELEASE SAVEPOINT bandeja_handler")
        .execute(&mut *tx)
        .await
        .expect("the first handler's savepoint is open");
    store.commit(tx).await.expect("commit");
    assert_eq!(store.committed(mark).await.expect("status"), Some(true));

    let (rolled_back, mark) = marked(&store).await;
    drop(rolled_back);
    let status = eventually(Duration::from_secs(10), || {
        let store = &store;
        async move { store.committed(mark).await.ok().flatten() }
    })
    .await
    .expect("the rolled-back transaction's status is known");
    assert!(!status, "a transaction dropped unfinished did not commit");
}

/// A new transaction of `store`, marked and with the first handler's savepoint open.
async fn marked(store: &PgStore) -> (<PgStore as Store>::Tx, i64) {
    let mut tx = store.begin().await.expect("begin");
    let mark = store
        .mark_and_open(&mut tx)
        .await
        .expect("mark and open")
        .expect("PostgreSQL marks a transaction by its id");
    (tx, mark)
}
