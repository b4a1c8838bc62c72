//! Test support (feature `testing`) for code that runs against a real PostgreSQL: the
//! database tests use, a fresh migrated store in a schema of its own per test (so tests run
//! in parallel) that a guard drops afterwards, and the rule for an unreachable server —
//! the test fails when `CI=true` (or `1`), and is skipped after a notice otherwise. For the
//! TLS tests, the root certificate the local server's certificate is signed by
//! ([`tls_root_certificate`], from `PG_TEST_SSLROOTCERT` or `scripts/ci/postgres-tls.sh`).
//! For tests of the planner's choices, the plan of a claim ([`explain_claim`]).
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
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use bandeja_core::store::ClaimRequest;
use bandeja_core::{BoxKind, Store, StoreError};
use sqlx::{Connection, PgConnection, Row};

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

/// The tests' database URL ([`database_url`]) with `query` added to its query string
/// (`host=…` overrides the URL's host; `sslmode=…&sslrootcert=…` sets TLS).
#[must_use]
pub fn database_url_with(query: &str) -> String {
    let url = database_url();
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{query}")
}

/// The environment variable naming the root certificate (PEM) the local server's TLS
/// certificate is signed by; `.ci/run` sets it to what `scripts/ci/postgres-tls.sh`
/// prints. (Not a `BANDEJA_*` name: the CLI rejects the `BANDEJA_*` variables it does not
/// know.)
pub const TLS_ROOT_CERTIFICATE_VARIABLE: &str = "PG_TEST_SSLROOTCERT";

/// The script of this repository that makes a CA and a server certificate, turns TLS on in
/// the local cluster and prints the CA's path (it needs root and `pg_ctlcluster`).
const TLS_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../scripts/ci/postgres-tls.sh"
);

/// The root certificate the local server's TLS certificate is signed by (its folder also
/// holds `other-ca.crt`, a CA that signed nothing the server shows), for tests of
/// `sslmode=verify-full`: [`TLS_ROOT_CERTIFICATE_VARIABLE`] when set, or else the path
/// `scripts/ci/postgres-tls.sh` prints, run once per test binary. When neither gives one:
/// panics in CI (see [`in_ci`]), prints a notice and returns `None` otherwise.
#[must_use]
pub fn tls_root_certificate() -> Option<PathBuf> {
    static CA: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let ca = CA.get_or_init(|| {
        if let Some(path) = std::env::var_os(TLS_ROOT_CERTIFICATE_VARIABLE) {
            return Ok(PathBuf::from(path));
        }
        let output = Command::new("bash")
            .arg(TLS_SCRIPT)
            .output()
            .map_err(|e| format!("cannot run {TLS_SCRIPT}: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "{TLS_SCRIPT} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(PathBuf::from(
            String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        ))
    });
    match ca {
        Ok(path) => Some(path.clone()),
        Err(error) => {
            skip_or_fail(
                &format!("TLS for PostgreSQL is not set up ({error})"),
                &format!(
                    "set {TLS_ROOT_CERTIFICATE_VARIABLE} or run scripts/ci/postgres-tls.sh as root"
                ),
            );
            None
        }
    }
}

/// Whether this runs in CI (`CI=true` or `CI=1`), where a missing service is a failure.
#[must_use]
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The rule for something a test needs and does not find (`what`, e.g. "PostgreSQL is
/// unreachable at …"; `hint`, what to do): panics in CI (see [`in_ci`]); otherwise prints
/// a notice that the test is skipped, and the caller returns.
///
/// # Panics
///
/// In CI, with `what` and `hint`.
pub fn skip_or_fail(what: &str, hint: &str) {
    assert!(!in_ci(), "{what}: {hint}");
    let _ = writeln!(
        std::io::stderr(),
        "notice: {what}; skipping this test: {hint}"
    );
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
    skip_or_fail(
        &format!("PostgreSQL is unreachable at {url} ({error})"),
        START_HINT,
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

/// The plan PostgreSQL picks, now, for the claim `store` would run for `request` (`EXPLAIN`
/// of the same statement with the same parameters, as text; nothing is claimed), for tests
/// of what the planner does with the box's statistics.
///
/// # Errors
///
/// The store's error when the statement cannot be planned.
pub async fn explain_claim(
    store: &PgStore,
    box_kind: BoxKind,
    request: &ClaimRequest<'_>,
) -> Result<String, StoreError> {
    let explain = format!(
        "EXPLAIN {}",
        crate::store::claim_sql(store, box_kind, request)
    );
    let rows = crate::store::bind_claim(sqlx::query(&explain), box_kind, request)
        .fetch_all(store.pool())
        .await
        .map_err(|e| crate::sqlx_error("explain a claim", e))?;
    rows.iter()
        .map(|row| row.try_get::<String, _>(0))
        .collect::<Result<Vec<_>, _>>()
        .map(|lines| lines.join("\n"))
        .map_err(|e| crate::sqlx_error("read a claim's plan", e))
}
