//! `bandeja serve` as a real process over a seeded SQLite file: its `/metrics` is one valid
//! exposition (`promtool check metrics` passes) with every runtime family (without samples:
//! it runs no workers) and the database gauges; `/health/live` is UP (it runs no workers),
//! `/health/ready` follows `--failed-threshold`.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::databases::sqlite_filled;
use common::serving::Serving;
use common::{seed, FAILING, SEEDED};

/// Runs `promtool check metrics` on `text`; what it reports fails the test. Without
/// promtool: a failure in CI (`.ci/run` installs Debian's `prometheus`), a notice otherwise.
fn promtool_check(text: &str) {
    let spawned = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                !bandeja_postgres::testing::in_ci(),
                "promtool is missing: install Debian's `prometheus` package (.ci/run does)"
            );
            eprintln!("notice: promtool is missing (apt-get install prometheus); not checking the exposition");
            return;
        }
        Err(e) => panic!("cannot run promtool: {e}"),
    };
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes()).expect("write to promtool");
    }
    let out = child.wait_with_output().expect("promtool's verdict");
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{}{}\n---- /metrics ----\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn serve_exports_valid_metrics_and_health_that_fits_kubernetes() {
    let (db, _ids) = sqlite_filled(seed);
    let server = Serving::start(
        &[&["--failed-threshold", "0"][..], &db.args()].concat(),
        &[],
    );
    let (status, metrics) = server.get("/metrics");
    assert_eq!(status, 200, "{metrics}");
    promtool_check(&metrics);
    for family in [
        "# TYPE bandeja_messages_handled_total counter",
        "# TYPE bandeja_messages_failed_total counter",
        "# TYPE bandeja_commit_to_handled_seconds histogram",
        "# TYPE bandeja_box_rows gauge",
    ] {
        assert!(metrics.contains(family), "{family}\n{metrics}");
    }
    // No worker here: no handled sample; the database's view of the fleet instead.
    assert!(
        !metrics
            .lines()
            .any(|l| l.starts_with("bandeja_messages_handled_total")),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "bandeja_box_rows{{box=\"inbox_events\",status=\"FAILED\"}} {SEEDED}"
        )),
        "{metrics}"
    );
    let failed = format!(
        "bandeja_subscription_failed_rows{{kind=\"event\",type=\"conformance.Ping\",subscriber=\"{FAILING}\",tenant=\"\"}} {SEEDED}"
    );
    assert!(metrics.contains(&failed), "{failed}\n{metrics}");

    let (status, live) = server.get("/health/live");
    assert_eq!(status, 200, "{live}");
    let (status, ready) = server.get("/health/ready");
    assert_eq!(status, 503, "{ready}");
    let ready: serde_json::Value = serde_json::from_str(&ready).expect("JSON");
    assert_eq!(ready["components"]["failed"]["status"], "DOWN", "{ready}");
    assert_eq!(ready["components"]["db"]["status"], "UP", "{ready}");
}
