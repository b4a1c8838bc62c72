//! The logging set-up as an operator meets it, through the real `bandeja` binary: an
//! invalid `BANDEJA_LOG` is reported and `info` is used; `--log-format json` (or
//! `BANDEJA_LOG_FORMAT=json`) gives one JSON object per line, the audit line of an admin
//! action among them (with the caller, never the token); a bad format stops at start; and
//! `migrate` on PostgreSQL, run twice, logs no "already exists" notice even at `debug`.

mod common;

use bandeja_postgres::testing::database_url;
use common::databases::{sqlite_filled, SqliteDatabase};
use common::serving::Serving;
use common::{bandeja_with_env, runtime};

const TOKEN: &str = "l0g-test-token-value";

/// `bandeja serve` on a fresh SQLite file (kept in `_db` while it runs), with `args` and
/// `env`, its stderr kept for [`Serving::stop`].
fn serving(args: &[&str], env: &[(&str, &str)]) -> (Serving, SqliteDatabase) {
    let (db, ()) = sqlite_filled(async |_| {});
    let serving = Serving::capturing_stderr(&[&db.args()[..], args].concat(), env);
    (serving, db)
}

/// Every stderr line as JSON (panics on one that is not an object).
fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|line| {
            let value: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}\n{text}"));
            assert!(value.is_object(), "{line}");
            value
        })
        .collect()
}

#[test]
fn an_invalid_filter_is_reported_and_info_is_used() {
    let (serve, _db) = serving(&[], &[("BANDEJA_LOG", "debgu")]);
    let text = serve.stop();
    let report: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("not a valid log filter"))
        .collect();
    assert_eq!(report.len(), 1, "reported once:\n{text}");
    assert!(report[0].contains("WARN"), "{text}");
    assert!(report[0].contains("BANDEJA_LOG"), "{text}");
    assert!(report[0].contains("value=debgu"), "{text}");
    assert!(report[0].contains("did you mean `debug`"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("INFO") && l.contains("bandeja HTTP endpoints listening")),
        "the INFO lines come through:\n{text}"
    );
}

#[test]
fn json_lines_carry_the_audit_of_an_admin_action_without_the_token() {
    let (serve, _db) = serving(&["--log-format", "json", "--token", TOKEN], &[]);
    let status = runtime().block_on(async {
        reqwest::Client::new()
            .post(format!("http://{}/retry?type=Ping", serve.addr))
            .bearer_auth(TOKEN)
            .header("user-agent", "ops-console/2.1")
            .send()
            .await
            .expect("POST /retry")
            .status()
            .as_u16()
    });
    assert_eq!(status, 200);
    let text = serve.stop();
    assert!(!text.contains(TOKEN), "the token in the logs:\n{text}");
    let lines = json_lines(&text);
    for line in &lines {
        for key in ["timestamp", "level", "target", "message"] {
            assert!(line.get(key).is_some(), "{key} missing: {line}");
        }
    }
    let audit = lines
        .iter()
        .find(|l| l["target"] == "bandeja_http::audit" && l["action"] == "retry")
        .unwrap_or_else(|| panic!("no audit line:\n{text}"));
    assert_eq!(audit["level"], "INFO", "{audit}");
    assert_eq!(audit["token"], "valid", "{audit}");
    assert_eq!(audit["peer_from"], "socket", "{audit}");
    assert!(
        audit["peer"]
            .as_str()
            .is_some_and(|p| p.starts_with("127.0.0.1:")),
        "{audit}"
    );
    assert_eq!(audit["user_agent"], "ops-console/2.1", "{audit}");
    assert_eq!(audit["filter"], "type=Ping", "{audit}");
    assert_eq!(audit["details"], "retried=0", "{audit}");
}

#[test]
fn the_format_variable_works_and_a_bad_one_stops_at_start() {
    let (serve, _db) = serving(&[], &[("BANDEJA_LOG_FORMAT", "json")]);
    let lines = json_lines(&serve.stop());
    assert!(
        lines
            .iter()
            .any(|l| l["message"] == "bandeja HTTP endpoints listening"),
        "{lines:#?}"
    );

    let bad = bandeja_with_env(&["status"], &[("BANDEJA_LOG_FORMAT", "jsn")]).expect_code(2);
    assert!(bad.stderr.contains("jsn"), "{bad:#?}");
    assert!(bad.stderr.contains("BANDEJA_LOG_FORMAT"), "{bad:#?}");
    assert!(bad.stderr.contains("`json`"), "{bad:#?}");
}

#[test]
fn migrate_twice_on_postgresql_logs_no_already_exists_notice() {
    let Some(schema) = runtime().block_on(bandeja_postgres::testing::fresh_schema("bandeja_cli"))
    else {
        return;
    };
    let url = database_url();
    for run in 1..=2 {
        let migrated = bandeja_with_env(
            &["migrate", "--database", &url, "--schema", schema.schema()],
            &[("BANDEJA_LOG", "debug")],
        )
        .expect_code(0);
        assert!(
            migrated.stderr.contains("sqlx::query"),
            "run {run} logs at debug (the statements):\n{}",
            migrated.stderr
        );
        assert!(
            !migrated.stderr.contains("already exists"),
            "run {run}:\n{}",
            migrated.stderr
        );
    }
}
