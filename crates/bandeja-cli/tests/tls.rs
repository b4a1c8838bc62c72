//! The `bandeja` binary over TLS to PostgreSQL: `sslmode=verify-full` with the CA that
//! `scripts/ci/postgres-tls.sh` made for the local server (`.ci/run` passes its path in
//! `PG_TEST_SSLROOTCERT`; without it the test runs the script) works, a wrong root
//! certificate is refused, and bad TLS parameters are usage errors that name the
//! parameter. Uses `DATABASE_URL`, or `postgres://postgres@127.0.0.1:5432/test`; when the
//! server is unreachable or TLS cannot be set up the tests fail under `CI=true` and are
//! skipped (with a notice) otherwise.

mod common;

use std::path::PathBuf;

use bandeja_postgres::testing::{
    database_url_with, fresh_schema, tls_root_certificate, SchemaGuard,
};
use common::{bandeja, runtime, Run};

/// A fresh schema and the server's CA, once both are there (see [`tls_root_certificate`]).
fn setup() -> Option<(SchemaGuard, PathBuf)> {
    let guard = runtime().block_on(fresh_schema("bandeja_cli_tls"))?;
    Some((guard, tls_root_certificate()?))
}

/// `bandeja --database '…?sslmode=verify-full&sslrootcert=…' migrate`, then `status`, to
/// localhost and to 127.0.0.1: both exit 0, and `status` shows the four boxes.
#[test]
fn status_over_verify_full_tls() {
    for host in ["localhost", "127.0.0.1"] {
        let Some((guard, ca)) = setup() else {
            return;
        };
        let url = database_url_with(&format!(
            "host={host}&sslmode=verify-full&sslrootcert={}",
            ca.display()
        ));
        let schema = guard.schema();
        let run = bandeja(&["--database", &url, "--schema", schema, "migrate"]).expect_code(0);
        assert!(run.stdout.contains("migrations applied"), "{run:#?}");
        let run = bandeja(&["--database", &url, "--schema", schema, "status"]).expect_code(0);
        for table in [
            "outbox_events",
            "inbox_events",
            "outbox_commands",
            "inbox_commands",
        ] {
            assert!(
                run.stdout.lines().any(|l| l.starts_with(table)),
                "{host}: {run:#?}"
            );
        }
    }
}

/// A root certificate that did not sign the server's: exit 1, and the message says the
/// certificate is not trusted and where the right CA goes.
#[test]
fn a_wrong_root_certificate_is_refused() {
    let Some((guard, ca)) = setup() else {
        return;
    };
    let other = ca.with_file_name("other-ca.crt");
    let url = database_url_with(&format!(
        "sslmode=verify-full&sslrootcert={}",
        other.display()
    ));
    let run = bandeja(&["--database", &url, "--schema", guard.schema(), "status"]).expect_code(1);
    assert!(
        run.stderr
            .contains("invalid peer certificate: UnknownIssuer")
            && run.stderr.contains("sslrootcert=/path/ca.pem"),
        "{run:#?}"
    );
}

/// `bandeja --database '<the tests' URL>?<query>' status`.
fn status_with(query: &str) -> Run {
    bandeja(&["--database", &database_url_with(query), "status"])
}

/// A misspelt `sslmode` and an `sslrootcert` file that does not exist: exit 2 (usage) with
/// the parameter and its value named, before any connection is tried.
#[test]
fn bad_tls_parameters_name_the_parameter() {
    let run = status_with("sslmode=verify_full").expect_code(2);
    assert!(
        run.stderr.contains("sslmode=verify_full: not a TLS mode")
            && run
                .stderr
                .contains("use one of disable, allow, prefer, require, verify-ca, verify-full"),
        "{run:#?}"
    );
    let run = status_with("sslmode=verify-full&sslrootcert=/no/such/ca.pem").expect_code(2);
    assert!(
        run.stderr
            .contains("sslrootcert=/no/such/ca.pem: cannot read the file"),
        "{run:#?}"
    );
}
