//! Test support (feature `testing`) for code that runs against a real PostgreSQL: the
//! database tests use, a fresh migrated store in a schema of its own per test (so tests run
//! in parallel) that a guard drops afterwards, and the rule for an unreachable server —
//! the test fails when `CI=true` (or `1`), and is skipped after a notice otherwise.
//!
//! ```no_run
//! # async fn demo() {
//! let Some((store, _schema)) = bandeja_postgres::testing::fresh_store("my_test").await else {
//!     return; // PostgreSQL is down and this is not CI
//! };
//! # let _ = store;
//! # }
//! ```

use std::io::Write;
use std::time::Duration;

use bandeja_core::Store;
use sqlx::{Connection, PgConnection};

use crate::PgStore;

/// How to start the local cluster, for the messages.
const START_HINT: &str = "start it with `pg_ctlcluster --skip-systemctl-redirect \
     $(ls /etc/postgresql) main start` or set DATABASE_URL";

/// The database tests use: `DATABASE_URL`, or `postgres://postgres@127.0.0.1:5432/test`.
#[must_use]
pub fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Whether this runs in CI (`CI=true` or `CI=1`), where a missing service is a failure.
#[must_use]
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Drops its schema (`DROP SCHEMA … CASCADE`) when dropped, on a thread of its own with its
/// own runtime, so it works inside a Tokio test, outside one, and when the test panics.
#[derive(Debug)]
pub struct SchemaGuard {
    url: String,
    schema: String,
}

impl SchemaGuard {
    /// A guard that drops `schema` of the tests' database (created by the test itself).
    #[must_use]
    pub fn adopt(schema: &str) -> SchemaGuard {
        SchemaGuard {
            url: database_url(),
            schema: schema.to_owned(),
        }
    }

    /// The schema.
    #[must_use]
    pub fn schema(&self) -> &str {
        &self.schema
    }
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        let url = self.url.clone();
        let sql = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema);
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let mut conn = PgConnection::connect(&url)
                    .await
                    .map_err(|e| e.to_string())?;
                sqlx::query(&sql)
                    .execute(&mut conn)
                    .await
                    .map_err(|e| e.to_string())?;
                conn.close().await.map_err(|e| e.to_string())
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            let _ = writeln!(
                std::io::stderr(),
                "warning: could not drop test schema {}: {dropped:?}",
                self.schema
            );
        }
    }
}

/// Whether the tests' database answers (within 10 s). When it does not: panics in CI,
/// prints a notice and returns `false` otherwise.
pub async fn reachable() -> bool {
    let url = database_url();
    let error =
        match tokio::time::timeout(Duration::from_secs(10), PgConnection::connect(&url)).await {
            Ok(Ok(conn)) => {
                let _ = conn.close().await;
                return true;
            }
            Ok(Err(error)) => error.to_string(),
            Err(_) => "timed out".to_owned(),
        };
    assert!(
        !in_ci(),
        "PostgreSQL is unreachable at {url} ({error}): {START_HINT}"
    );
    let _ = writeln!(
        std::io::stderr(),
        "notice: PostgreSQL is unreachable at {url} ({error}); skipping this test: {START_HINT}"
    );
    false
}

/// A fresh schema name `<prefix>_<random hex>` with its guard, once the database answers;
/// `None` (after a notice) when it does not, outside CI. Panics in CI.
pub async fn fresh_schema(prefix: &str) -> Option<SchemaGuard> {
    if !reachable().await {
        return None;
    }
    Some(SchemaGuard::adopt(&format!(
        "{prefix}_{}",
        uuid::Uuid::new_v4().simple()
    )))
}

/// A migrated store in a fresh schema `<prefix>_<random hex>` (see [`fresh_schema`]).
pub async fn fresh_store(prefix: &str) -> Option<(PgStore, SchemaGuard)> {
    let guard = fresh_schema(prefix).await?;
    let store = PgStore::connect_with_schema(&guard.url, &guard.schema)
        .await
        .unwrap_or_else(|e| panic!("connect to {}: {e}", guard.url));
    store
        .migrate()
        .await
        .unwrap_or_else(|e| panic!("migrate {}: {e}", guard.schema));
    Some((store, guard))
}
