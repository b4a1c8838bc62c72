//! TLS to PostgreSQL: the store connects with `sslmode=verify-full` and the CA that
//! `scripts/ci/postgres-tls.sh` made for the local server (`.ci/run` passes its path in
//! `PG_TEST_SSLROOTCERT`; without it the test runs the script), and the server says the
//! connection is encrypted; a wrong root certificate is refused; `sslmode=disable` is not
//! encrypted. Uses `DATABASE_URL`, or `postgres://postgres@127.0.0.1:5432/test`; when the
//! server is unreachable or TLS cannot be set up the tests fail under `CI=true` and are
//! skipped (with a notice) otherwise.

use std::path::PathBuf;
use std::time::Duration;

use bandeja_conformance::fixtures::emit_ping;
use bandeja_core::admin::Admin;
use bandeja_core::store::ClaimRequest;
use bandeja_core::{BoxKind, Store};
use bandeja_postgres::testing::{
    database_url_with, fresh_schema, tls_root_certificate, SchemaGuard,
};
use bandeja_postgres::PgStore;
use sqlx::PgPool;

/// A fresh schema and the server's CA, once both are there (see [`tls_root_certificate`]).
async fn setup() -> Option<(SchemaGuard, PathBuf)> {
    let guard = fresh_schema("bandeja_tls").await?;
    Some((guard, tls_root_certificate()?))
}

/// Whether the server sees this pool's connection as encrypted, and with which protocol.
async fn encryption(pool: &PgPool) -> (bool, Option<String>) {
    sqlx::query_as(
        "SELECT s.ssl, s.version FROM pg_stat_ssl s \
         JOIN pg_stat_activity a ON a.pid = s.pid WHERE a.pid = pg_backend_pid()",
    )
    .fetch_one(pool)
    .await
    .expect("read pg_stat_ssl")
}

/// Migrates, emits one event and claims it, and reads the counters: the store works over
/// this connection.
async fn emit_and_claim(store: &PgStore) {
    store.migrate().await.expect("migrate over TLS");
    let record = emit_ping(store, 1, "k").await;
    let request = ClaimRequest {
        worker_id: "tls",
        limit: 10,
        lease: Duration::from_secs(30),
        ordered: true,
        from_seq: None,
        tenant: None,
        subscribers: None,
    };
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].record.id, record.id);
    let counters = store
        .counters(Duration::from_secs(60), false)
        .await
        .expect("counters");
    let outbox = counters
        .iter()
        .find(|c| c.box_kind == BoxKind::OutboxEvents)
        .expect("the events outbox is counted");
    assert_eq!((outbox.pending, outbox.processing), (0, 1), "{outbox:?}");
}

/// `sslmode=verify-full` with the server's CA, to 127.0.0.1 (an IP address in the
/// certificate) and to localhost (a DNS name): the store migrates, emits and claims, and
/// the server reports the connection encrypted with TLS.
#[tokio::test]
async fn verify_full_with_the_servers_ca_is_encrypted() {
    for host in ["127.0.0.1", "localhost"] {
        let Some((guard, ca)) = setup().await else {
            return;
        };
        let url = database_url_with(&format!(
            "host={host}&sslmode=verify-full&sslrootcert={}",
            ca.display()
        ));
        let store = PgStore::connect_with_schema(&url, guard.schema())
            .await
            .unwrap_or_else(|e| panic!("connect to {url}: {e}"));
        emit_and_claim(&store).await;
        let (ssl, version) = encryption(store.pool()).await;
        assert!(ssl, "{host}: the connection is not encrypted");
        assert!(
            version.as_deref().is_some_and(|v| v.starts_with("TLSv1.")),
            "{host}: {version:?}"
        );
        store.pool().close().await;
    }
}

/// `sslmode=verify-full` with a CA that did not sign the server's certificate: the
/// connection is refused, and the error says the certificate is the reason.
#[tokio::test]
async fn verify_full_with_another_ca_is_refused() {
    let Some((guard, ca)) = setup().await else {
        return;
    };
    let other = ca.with_file_name("other-ca.crt");
    let url = database_url_with(&format!(
        "sslmode=verify-full&sslrootcert={}",
        other.display()
    ));
    let error = PgStore::connect_with_schema(&url, guard.schema())
        .await
        .expect_err("a certificate the root does not vouch for");
    let text = error.to_string();
    assert!(
        text.contains("invalid peer certificate") && text.contains("UnknownIssuer"),
        "{text}"
    );
    assert!(
        text.contains("sslrootcert=/path/ca.pem"),
        "says what to do: {text}"
    );
    assert!(
        !error.is_transient(),
        "retrying cannot fix a refused certificate"
    );
}

/// A misspelt `sslmode` or an `sslrootcert` file that is not there: refused before any
/// connection, naming the parameter (sqlx would say "`ssl_mode`", or "No such file or
/// directory" once connected).
#[tokio::test]
async fn bad_tls_parameters_are_named_before_connecting() {
    let Some((guard, _ca)) = setup().await else {
        return;
    };
    let mode =
        PgStore::connect_with_schema(&database_url_with("sslmode=verify_full"), guard.schema())
            .await
            .expect_err("not a mode");
    assert!(
        mode.to_string()
            .contains("sslmode=verify_full: not a TLS mode"),
        "{mode}"
    );
    assert!(!mode.is_transient());
    let file = PgStore::connect_with_schema(
        &database_url_with("sslmode=verify-full&sslrootcert=/no/such/ca.pem"),
        guard.schema(),
    )
    .await
    .expect_err("no such file");
    assert!(
        file.to_string()
            .contains("sslrootcert=/no/such/ca.pem: cannot read the file"),
        "{file}"
    );
}

/// `sslmode=disable`: the store works and the server reports the connection unencrypted;
/// `sslmode=prefer` (sqlx's default) negotiates TLS with a server that has it on.
#[tokio::test]
async fn disable_is_plain_text_and_prefer_is_encrypted() {
    let Some((guard, _)) = setup().await else {
        return;
    };
    let store = PgStore::connect_with_schema(&database_url_with("sslmode=disable"), guard.schema())
        .await
        .expect("connect without TLS");
    emit_and_claim(&store).await;
    assert_eq!(encryption(store.pool()).await, (false, None));
    store.pool().close().await;

    let pool = PgPool::connect(&database_url_with("sslmode=prefer"))
        .await
        .expect("connect with sslmode=prefer");
    assert!(encryption(&pool).await.0, "prefer did not negotiate TLS");
    pool.close().await;
}
