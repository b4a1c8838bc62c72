//! Shared by the PostgreSQL test crates: a fresh, migrated store in a schema of its own per
//! test (so tests run in parallel), dropped with the guard.
//!
//! Uses `DATABASE_URL`, or `postgres://postgres@127.0.0.1:5432/test`. When PostgreSQL is
//! unreachable the tests fail if `CI=true`, and are skipped otherwise.

// Each test crate uses a part of this module.
#![allow(dead_code)]

use std::io::Write;
use std::time::Duration;

use bandeja_core::Store;
use bandeja_postgres::PgStore;
use sqlx::{Connection, PgConnection};

/// How to start the local cluster.
const START_HINT: &str =
    "start it with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` or set DATABASE_URL";

/// The database the tests use.
pub(crate) fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Drops its schema (`DROP SCHEMA … CASCADE`) when dropped, on a thread of its own with its
/// own runtime, so it works inside a Tokio test and also when the test panics.
pub(crate) struct SchemaGuard {
    url: String,
    schema: String,
}

impl SchemaGuard {
    /// A guard that drops `schema` (created by the test itself).
    pub(crate) fn adopt(schema: &str) -> SchemaGuard {
        SchemaGuard {
            url: database_url(),
            schema: schema.to_owned(),
        }
    }

    /// The schema this test owns.
    pub(crate) fn schema(&self) -> &str {
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

/// A connection to the test database, or `None` (after a notice) when PostgreSQL is
/// unreachable outside CI. Panics in CI.
async fn admin_connection(url: &str) -> Option<PgConnection> {
    let error =
        match tokio::time::timeout(Duration::from_secs(10), PgConnection::connect(url)).await {
            Ok(Ok(conn)) => return Some(conn),
            Ok(Err(error)) => error.to_string(),
            Err(_) => "timed out".to_owned(),
        };
    if in_ci() {
        panic!("PostgreSQL is unreachable at {url} ({error}): {START_HINT}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "notice: PostgreSQL is unreachable at {url} ({error}); skipping the PostgreSQL tests: {START_HINT}"
    );
    None
}

/// A fresh, migrated store in a new schema `bandeja_t_<random hex>`, or `None` when
/// PostgreSQL is unreachable outside CI.
pub(crate) async fn try_fresh_store() -> Option<(PgStore, SchemaGuard)> {
    let url = database_url();
    let conn = admin_connection(&url).await?;
    let _ = conn.close().await;
    let schema = format!("bandeja_t_{}", uuid::Uuid::new_v4().simple());
    let guard = SchemaGuard {
        url: url.clone(),
        schema: schema.clone(),
    };
    let store = PgStore::connect_with_schema(&url, &schema)
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    Some((store, guard))
}

/// [`try_fresh_store`] for the conformance macro, which cannot skip a test: when PostgreSQL
/// is unreachable outside CI the whole test binary ends successfully after a notice.
pub(crate) async fn fresh_store() -> (PgStore, SchemaGuard) {
    match try_fresh_store().await {
        Some(fresh) => fresh,
        None => std::process::exit(0),
    }
}
