//! `bandeja --config FILE` (and `BANDEJA_CONFIG`): the application's configuration file is
//! read and checked before anything runs. A misspelt key or a bad duration is a usage
//! error (exit 2) naming the key and the file. What the CLI uses — `stuck-threshold` (and
//! the liveness of processes derived from it) and the completion modes — comes from the
//! same loader as the application's, flag over variable over file over default, from the
//! environment alone as from the file alone.

mod common;

use std::path::Path;

use bandeja_conformance::fixtures::TempDir;
use common::{bandeja, bandeja_with_env};

/// A migrated, empty SQLite database in `dir`: its URL.
fn migrated(dir: &TempDir) -> String {
    let url = dir.sqlite_url("boxes.db");
    bandeja(&["migrate", "--database", &url]).expect_code(0);
    url
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).expect("write the configuration file");
    path.display().to_string()
}

#[test]
fn a_config_file_with_a_misspelt_key_is_refused_naming_the_key_and_the_file() {
    let dir = TempDir::new("bandeja-cli");
    let url = migrated(&dir);
    let file = write(
        &dir.path().join("bandeja.toml"),
        "stuck-threshold = \"PT10M\"\n[app.events.outbox-processor]\nbach-size = 50\n",
    );
    let run = bandeja(&["--config", &file, "status", "--database", &url]).expect_code(2);
    for part in [
        "unknown configuration key `app.events.outbox-processor.bach-size`",
        "did you mean `app.events.outbox-processor.batch-size`?",
        &file,
    ] {
        assert!(run.stderr.contains(part), "`{part}`: {run:#?}");
    }
    assert!(run.stdout.is_empty(), "nothing ran: {run:#?}");

    // In bandeja's own names, through the variable.
    let file = write(
        &dir.path().join("other.toml"),
        "[events.inbox]\nmax-retrys = 5\n",
    );
    let run = bandeja_with_env(
        &["status", "--database", &url],
        &[("BANDEJA_CONFIG", &file)],
    )
    .expect_code(2);
    assert!(run.stderr.contains("`events.inbox.max-retrys`"), "{run:#?}");
    assert!(run.stderr.contains(&file), "{run:#?}");
}

#[test]
fn a_config_file_with_a_bad_duration_is_refused_naming_the_key_and_the_file() {
    let dir = TempDir::new("bandeja-cli");
    let url = migrated(&dir);
    let file = write(
        &dir.path().join("bandeja.toml"),
        "[app.commands.inbox-processor]\nlock-at-most-for = \"20 secs\"\n",
    );
    let run = bandeja_with_env(
        &["status", "--database", &url],
        &[("BANDEJA_CONFIG", &file)],
    )
    .expect_code(2);
    for part in [
        "invalid value `20 secs` for `app.commands.inbox-processor.lock-at-most-for`",
        "expected a duration",
        &file,
    ] {
        assert!(run.stderr.contains(part), "`{part}`: {run:#?}");
    }

    // A valid duration that breaks a rule (below lock-at-least-for) names the file too.
    let file = write(
        &dir.path().join("short.toml"),
        "[app.events.outbox-processor]\nlock-at-most-for = \"5s\"\n",
    );
    let run = bandeja(&["--config", &file, "status", "--database", &url]).expect_code(2);
    assert!(
        run.stderr
            .contains("`app.events.outbox-processor.lock-at-most-for`"),
        "{run:#?}"
    );
    assert!(run.stderr.contains(&file), "{run:#?}");

    // A missing file and malformed TOML: the reason, not only the file.
    let missing = dir.path().join("missing.toml").display().to_string();
    let run = bandeja(&["--config", &missing, "status", "--database", &url]).expect_code(2);
    assert!(run.stderr.contains(&missing), "{run:#?}");
    assert!(run.stderr.contains("No such file"), "{run:#?}");
    let broken = write(&dir.path().join("broken.toml"), "[events.outbox\n");
    let run = bandeja(&["--config", &broken, "status", "--database", &url]).expect_code(2);
    assert!(run.stderr.contains("malformed TOML"), "{run:#?}");
    assert!(run.stderr.contains("line 1"), "{run:#?}");
}

#[test]
fn a_good_config_file_sets_the_stuck_threshold_of_status() {
    let dir = TempDir::new("bandeja-cli");
    let url = migrated(&dir);
    let file = write(
        &dir.path().join("application.toml"),
        "stuck-threshold = \"PT7M\"\n\
         [app.events.outbox-processor]\nbatch-size = 200\npolling-interval = \"PT1S\"\n\
         [app.commands.topics]\nbilling = \"billing.commands\"\n",
    );
    let threshold = |run: common::Run| run.expect_code(0).json()["stuck_threshold"].clone();
    let status = ["--config", &file, "status", "--json", "--database", &url];
    assert_eq!(threshold(bandeja(&status)), "PT7M");
    let with_flag = [&status[..], &["--stuck-threshold", "1m"]].concat();
    assert_eq!(threshold(bandeja(&with_flag)), "PT1M", "the flag wins");
    let env_over_file = bandeja_with_env(&status, &[("BANDEJA_STUCK_THRESHOLD", "PT9M")]);
    assert_eq!(
        threshold(env_over_file),
        "PT9M",
        "the environment wins over the file"
    );
    // The command's own variables are not configuration keys.
    let own = bandeja_with_env(
        &status,
        &[("BANDEJA_SCHEMA", "bandeja"), ("BANDEJA_ADMIN_TOKEN", "t")],
    );
    assert_eq!(threshold(own), "PT7M");
    let text = bandeja(&["--config", &file, "status", "--database", &url]).expect_code(0);
    assert!(
        text.stdout.contains("for longer than PT7M; times in UTC"),
        "{text:#?}"
    );
    // No file: the specification's default.
    let plain = ["status", "--json", "--database", &url];
    assert_eq!(threshold(bandeja(&plain)), "PT5M");
}

/// What `status`, `status --check` and `subscribers` take from the configuration: the
/// stuck threshold, and how long a process counts as live (derived from it as the
/// processes derive it).
fn assert_threshold_taken(url: &str, config: &[&str], env: &[(&str, &str)]) {
    let run = |args: &[&str]| bandeja_with_env(&[config, args, &["--database", url]].concat(), env);
    let status = run(&["status", "--json"]).expect_code(0).json();
    assert_eq!(status["stuck_threshold"], "PT3S", "{status:#}");
    let check = run(&["status", "--check"]).expect_code(0);
    assert!(
        check.stdout.contains("stuck: none, threshold PT3S"),
        "{check:#?}"
    );
    let subscribers = run(&["subscribers", "--json"]).expect_code(0).json();
    assert_eq!(subscribers["stuck_threshold"], "PT3S", "{subscribers:#}");
    assert_eq!(subscribers["live_for"], "PT3S", "{subscribers:#}");
    // The flag wins for what counts as unattended; liveness stays the processes'.
    let flagged = run(&["subscribers", "--json", "--stuck-threshold", "1m"])
        .expect_code(0)
        .json();
    assert_eq!(flagged["stuck_threshold"], "PT1M", "{flagged:#}");
    assert_eq!(flagged["live_for"], "PT3S", "{flagged:#}");
    // The completion modes: an outbox in `delete` mode keeps nothing to replay.
    let replay = run(&["replay", "--outbox", "--all", "--dry-run"]).expect_code(1);
    assert!(
        replay
            .stderr
            .contains("outbox_events completes in `delete` mode"),
        "{replay:#?}"
    );
}

#[test]
fn the_environment_alone_configures_the_cli() {
    let dir = TempDir::new("bandeja-cli");
    let url = migrated(&dir);
    assert_threshold_taken(
        &url,
        &[],
        &[
            ("BANDEJA_STUCK_THRESHOLD", "PT3S"),
            ("BANDEJA_EVENTS_OUTBOX_COMPLETION_MODE", "delete"),
        ],
    );
    // Without either: the defaults.
    let subscribers = bandeja(&["subscribers", "--json", "--database", &url])
        .expect_code(0)
        .json();
    assert_eq!(subscribers["stuck_threshold"], "PT5M");
    assert_eq!(subscribers["live_for"], "PT30S");
    bandeja(&[
        "replay",
        "--outbox",
        "--all",
        "--dry-run",
        "--database",
        &url,
    ])
    .expect_code(0);
    // A misspelt variable is refused, naming it.
    let run = bandeja_with_env(
        &["subscribers", "--database", &url],
        &[("BANDEJA_STUCK_TRESHOLD", "PT3S")],
    )
    .expect_code(2);
    assert!(run.stderr.contains("BANDEJA_STUCK_TRESHOLD"), "{run:#?}");
}

#[test]
fn the_file_alone_configures_the_cli() {
    let dir = TempDir::new("bandeja-cli");
    let url = migrated(&dir);
    let file = write(
        &dir.path().join("application.toml"),
        "stuck-threshold = \"PT3S\"\n[events.outbox]\ncompletion-mode = \"delete\"\n",
    );
    assert_threshold_taken(&url, &["--config", &file], &[]);
    assert_threshold_taken(&url, &[], &[("BANDEJA_CONFIG", &file)]);
}
