use std::time::Duration;

use super::*;
use crate::config::{Enabled, HandlerTransaction, WorkerConfig};
use crate::record::BoxKind;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn env(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let vars = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
    Config::default().apply_env(vars)
}

/// The key and message of an `UnknownKey`, or a panic naming what came instead.
/// The key and full message (with the hint) of an unknown key, or a panic naming what
/// came instead.
fn unknown_key(result: Result<Config, ConfigError>) -> (String, String) {
    match &result {
        Err(e) if e.kind() == ConfigErrorKind::UnknownKey => {
            (e.key().unwrap_or_default().to_owned(), e.full_message())
        }
        other => panic!("expected UnknownKey, got {other:?}"),
    }
}

fn invalid_value(result: Result<Config, ConfigError>) -> (String, String, String) {
    match result {
        Err(e) if e.kind() == ConfigErrorKind::InvalidValue => (
            e.key().unwrap_or_default().to_owned(),
            e.value().unwrap_or_default().to_owned(),
            e.reason().unwrap_or_default().to_owned(),
        ),
        other => panic!("expected InvalidValue, got {other:?}"),
    }
}

#[test]
fn toml_overrides_every_key_of_a_group() {
    let text = r#"
            stuck-threshold = "10m"
            [commands.inbox]
            enabled = false
            polling-interval = "PT1S"
            polling-initial-delay = "500ms"
            lock-at-least-for = "PT1M"
            lock-at-most-for = "2m"
            batch-size = 7
            max-retries = 9
            retry-backoff-initial = "PT0.25S"
            retry-backoff-max = "1h"
            retry-backoff-multiplier = 3
            retry-jitter = 0.5
            handler-timeout = "P1D"
            ordered = false
            handler-transaction = "batch"
            [commands.topics]
            billing = "billing.commands"
        "#;
    let config = Config::from_toml_str(text).map_err(|e| e.to_string());
    let expected = Config {
        commands_inbox: WorkerConfig {
            enabled: Enabled::Off,
            polling_interval: secs(1),
            polling_initial_delay: Duration::from_millis(500),
            lock_at_least_for: secs(60),
            lock_at_most_for: secs(120),
            batch_size: 7,
            max_retries: 9,
            retry_backoff_initial: Duration::from_millis(250),
            retry_backoff_max: secs(3_600),
            retry_backoff_multiplier: 3.0,
            retry_jitter: 0.5,
            handler_timeout: secs(86_400),
            ordered: false,
            handler_transaction: HandlerTransaction::Batch,
            ..WorkerConfig::commands_inbox_defaults()
        },
        stuck_threshold: secs(600),
        ..Config::default().with_command_topic("billing", "billing.commands")
    };
    assert_eq!(config, Ok(expected));
}

#[test]
fn toml_enabled_accepts_bool_and_auto() {
    let text = "[events.outbox]\nenabled = \"auto\"\n[events.inbox]\nenabled = true";
    let config = Config::from_toml_str(text).ok();
    let enabled = config.map(|c| (c.events_outbox.enabled, c.events_inbox.enabled));
    assert_eq!(enabled, Some((Enabled::Auto, Enabled::On)));
    let empty = Config::from_toml_str("[events.outbox]\n[commands.topics]").ok();
    assert_eq!(empty, Some(Config::default()));
}

#[test]
fn unknown_toml_keys_are_named_with_their_path() {
    // The hint lists a group's keys in the order of its fields, the last one last.
    let last = WorkerConfig::FIELD_DOCS
        .last()
        .map(|(field, _)| field.replace('_', "-"))
        .unwrap_or_default();
    let outbox_last = format!("`{last}` in `events.outbox`");
    let inbox_last = format!("`{last}` in `events.inbox`");
    let cases = [
            (
                "stuck-treshold = \"PT5M\"",
                "stuck-treshold",
                "did you mean `stuck-threshold`?",
            ),
            (
                "[events.outbox]\nbach-size = 3",
                "events.outbox.bach-size",
                outbox_last.as_str(),
            ),
            (
                "[events.outbx]",
                "events.outbx",
                "did you mean `events.outbox`?",
            ),
            (
                "[commands.topicz]",
                "commands.topicz",
                "did you mean `commands.topics`?",
            ),
            (
                "[queries.inbox]",
                "queries",
                "expected one of `stuck-threshold`, `events`, `commands`, `staleness`, `app` at the top level",
            ),
            (
                "[events.inbox]\n\"a.b\" = 1",
                "events.inbox.\"a.b\"",
                inbox_last.as_str(),
            ),
        ];
    for (text, key, hint) in cases {
        let (found, message) = unknown_key(Config::from_toml_str(text));
        assert_eq!(found, key, "{text}");
        assert!(
            message.starts_with(&format!("unknown configuration key `{key}`")),
            "{message}"
        );
        assert!(message.contains(hint), "{message}");
    }
}

#[test]
fn bad_toml_values_are_named_with_their_path() {
    let cases = [
        (
            "[events.outbox]\npolling-interval = \"abc\"",
            "events.outbox.polling-interval",
            "expected a duration like `PT5S` or `5s`",
        ),
        (
            "[events.outbox]\npolling-interval = 5",
            "events.outbox.polling-interval",
            "a bare number has no unit",
        ),
        (
            "[events.inbox]\nlock-at-least-for = \"-5s\"",
            "events.inbox.lock-at-least-for",
            "negative",
        ),
        (
            "[events.inbox]\nbatch-size = \"10\"",
            "events.inbox.batch-size",
            "expected an integer",
        ),
        (
            "[events.inbox]\nbatch-size = -1",
            "events.inbox.batch-size",
            "between 1 and 10000",
        ),
        (
            "[events.inbox]\nbatch-size = 1.5",
            "events.inbox.batch-size",
            "expected an integer",
        ),
        (
            "[commands.outbox]\nmax-retries = 5000000000",
            "commands.outbox.max-retries",
            "expected an integer",
        ),
        (
            "[commands.outbox]\nenabled = \"maybe\"",
            "commands.outbox.enabled",
            "auto",
        ),
        (
            "[commands.outbox]\nenabled = 1",
            "commands.outbox.enabled",
            "auto",
        ),
        (
            "[commands.outbox]\nordered = \"yes\"",
            "commands.outbox.ordered",
            "`true` or `false`",
        ),
        (
            "[commands.outbox]\nretry-jitter = \"x\"",
            "commands.outbox.retry-jitter",
            "a number",
        ),
        (
            "[commands.topics]\nbilling = 3",
            "commands.topics.billing",
            "topic name",
        ),
        ("events = 5", "events", "expected a table"),
        (
            "[events]\noutbox = \"fast\"",
            "events.outbox",
            "expected a table",
        ),
        (
            "stuck-threshold = \"PT0S\"",
            "stuck-threshold",
            "greater than zero",
        ),
        (
            "[commands.inbox]\nbatch-size = 0",
            "commands.inbox.batch-size",
            "between 1 and 10000",
        ),
        (
            "[events.outbox]\nlock-at-most-for = \"5s\"",
            "events.outbox.lock-at-most-for",
            "at least lock-at-least-for",
        ),
    ];
    for (text, key, reason_part) in cases {
        let (found, _, reason) = invalid_value(Config::from_toml_str(text));
        assert_eq!(found, key, "{text}");
        assert!(reason.contains(reason_part), "{text}: {reason}");
    }
    let (_, value, _) = invalid_value(Config::from_toml_str(
        "[events.outbox]\npolling-interval = \"abc\"",
    ));
    assert_eq!(value, "abc");
}

#[test]
fn malformed_toml_and_missing_files_are_reported() {
    use std::error::Error as _;
    match Config::from_toml_str("[events.outbox\nbatch-size = 1") {
        Err(e) if e.kind() == ConfigErrorKind::Parse => {
            assert_eq!(e.to_string(), "malformed TOML in <string>");
            assert!(e.source().is_some_and(|s| s.to_string().contains("line 1")));
        }
        other => panic!("expected Parse, got {other:?}"),
    }
    let name = format!("bandeja-missing-{}.toml", std::process::id());
    let path = std::env::temp_dir().join(name);
    match Config::from_toml_file(&path) {
        Err(e) if e.kind() == ConfigErrorKind::Io => {
            assert_eq!(e.file(), Some(path.as_path()));
            assert!(e.to_string().contains("bandeja-missing-"));
            assert!(e.source().is_some());
        }
        other => panic!("expected Io, got {other:?}"),
    }
}

#[test]
fn toml_files_are_read_and_env_overrides_them() {
    let path = std::env::temp_dir().join(format!("bandeja-config-{}.toml", std::process::id()));
    let written = std::fs::write(&path, "[events.inbox]\nbatch-size = 20\nmax-retries = 5\n");
    assert!(written.is_ok(), "{written:?}");
    let from_file = Config::from_toml_file(&path).map_err(|e| e.to_string());
    let vars = [(
        "BANDEJA_EVENTS_INBOX_BATCH_SIZE".to_owned(),
        "30".to_owned(),
    )];
    let layered = from_file
        .clone()
        .and_then(|c| c.apply_env(vars).map_err(|e| e.to_string()));
    // `load` reads the real environment: only compare when it holds no BANDEJA_ variables.
    let quiet = std::env::vars_os().all(|(k, _)| {
        let k = k.to_string_lossy();
        !k.starts_with(ENV_PREFIX) || RESERVED_ENV_VARS.contains(&k.as_ref())
    });
    if quiet {
        assert_eq!(
            Config::load(Some(&path)).map_err(|e| e.to_string()),
            from_file
        );
        assert_eq!(Config::load(None).ok(), Some(Config::default()));
    }
    let _ = std::fs::remove_file(&path);
    let inbox = from_file
        .as_ref()
        .map(|c| (c.events_inbox.batch_size, c.events_inbox.max_retries));
    assert_eq!(inbox, Ok((20, 5)));
    let inbox = layered.map(|c| (c.events_inbox.batch_size, c.events_inbox.max_retries));
    assert_eq!(inbox, Ok((30, 5)));
}

#[test]
fn env_overlays_values() {
    let config = env(&[
        ("BANDEJA_EVENTS_OUTBOX_POLLING_INTERVAL", "7s"),
        ("BANDEJA_COMMANDS_INBOX_ENABLED", "false"),
        ("BANDEJA_COMMANDS_OUTBOX_ENABLED", "ON"),
        ("BANDEJA_EVENTS_INBOX_ENABLED", "Auto"),
        ("BANDEJA_EVENTS_INBOX_BATCH_SIZE", "10"),
        ("BANDEJA_EVENTS_INBOX_RETRY_BACKOFF_MULTIPLIER", "1.5"),
        ("BANDEJA_EVENTS_INBOX_ORDERED", "no"),
        ("BANDEJA_COMMANDS_INBOX_HANDLER_TIMEOUT", "PT1M"),
        ("BANDEJA_STUCK_THRESHOLD", "PT10M"),
        (
            "BANDEJA_COMMANDS_TOPICS",
            "billing=billing.commands, shipping = shipping.cmds,",
        ),
        ("BANDEJA_LOG", "debug"),
        ("BANDEJA_CONFIG", "/etc/bandeja.toml"),
        ("PATH", "/usr/bin"),
    ]);
    let mut expected = Config::default()
        .with_command_topic("billing", "billing.commands")
        .with_command_topic("shipping", "shipping.cmds");
    expected.events_outbox.polling_interval = secs(7);
    expected.commands_inbox.enabled = Enabled::Off;
    expected.commands_outbox.enabled = Enabled::On;
    expected.events_inbox.batch_size = 10;
    expected.events_inbox.retry_backoff_multiplier = 1.5;
    expected.events_inbox.ordered = false;
    expected.commands_inbox.handler_timeout = secs(60);
    expected.stuck_threshold = secs(600);
    assert_eq!(config.map_err(|e| e.to_string()), Ok(expected));
}

#[test]
fn env_topics_replace_the_table() {
    let base = Config::default().with_command_topic("old", "old.topic");
    let vars = [(
        "BANDEJA_COMMANDS_TOPICS".to_owned(),
        "new=new.topic".to_owned(),
    )];
    let topics = base.clone().apply_env(vars).map(|c| c.command_topics);
    let expected = BTreeMap::from([("new".to_owned(), "new.topic".to_owned())]);
    assert_eq!(topics.ok(), Some(expected));
    let vars = [("BANDEJA_COMMANDS_TOPICS".to_owned(), String::new())];
    assert_eq!(
        base.apply_env(vars).ok().map(|c| c.command_topics.len()),
        Some(0)
    );
    for (value, reason) in [
        ("billing", "missing `=`"),
        ("billing=", "empty service or topic"),
        ("=topic", "empty service or topic"),
        ("a=x,a=y", "listed twice"),
    ] {
        let (key, found, message) = invalid_value(env(&[("BANDEJA_COMMANDS_TOPICS", value)]));
        assert_eq!(
            (key.as_str(), found.as_str()),
            ("BANDEJA_COMMANDS_TOPICS", value)
        );
        assert!(message.contains(reason), "{value}: {message}");
    }
}

#[test]
fn unknown_env_vars_are_named() {
    let cases = [
        (
            "BANDEJA_EVENTS_OUTBOX_BATCHSIZE",
            "did you mean `BANDEJA_EVENTS_OUTBOX_BATCH_SIZE`?",
        ),
        ("BANDEJA_EVENTS_OUTBOX", "`ENABLED`, `POLLING_INTERVAL`"),
        (
            "BANDEJA_STUCK_TRESHOLD",
            "did you mean `BANDEJA_STUCK_THRESHOLD`?",
        ),
        (
            "BANDEJA_QUERIES_INBOX_ENABLED",
            "`BANDEJA_EVENTS_INBOX_<KEY>`",
        ),
        ("BANDEJA_events_outbox_enabled", "`BANDEJA_COMMANDS_TOPICS`"),
        ("BANDEJA_LOGGING", "`BANDEJA_STUCK_THRESHOLD`"),
    ];
    for (name, hint) in cases {
        let (key, message) = unknown_key(env(&[(name, "1")]));
        assert_eq!(key, name);
        assert!(message.contains(hint), "{message}");
    }
}

#[test]
fn bad_env_values_name_the_variable() {
    let cases = [
        (
            "BANDEJA_EVENTS_OUTBOX_POLLING_INTERVAL",
            "5 parsecs",
            "expected a duration",
        ),
        ("BANDEJA_EVENTS_OUTBOX_ENABLED", "maybe", "`auto`"),
        (
            "BANDEJA_EVENTS_OUTBOX_BATCH_SIZE",
            "-1",
            "expected an integer",
        ),
        (
            "BANDEJA_EVENTS_OUTBOX_MAX_RETRIES",
            "many",
            "expected an integer",
        ),
        ("BANDEJA_EVENTS_OUTBOX_RETRY_JITTER", "lots", "a number"),
        ("BANDEJA_EVENTS_OUTBOX_ORDERED", "auto", "`true` or `false`"),
        ("BANDEJA_STUCK_THRESHOLD", "", "empty"),
    ];
    for (name, value, reason) in cases {
        let (key, found, message) = invalid_value(env(&[(name, value)]));
        assert_eq!((key.as_str(), found.as_str()), (name, value));
        assert!(message.contains(reason), "{name}: {message}");
    }
    // Validation runs after the overlay and names the dotted key.
    let zero = env(&[("BANDEJA_EVENTS_INBOX_BATCH_SIZE", "0")]);
    assert_eq!(invalid_value(zero).0, "events.inbox.batch-size");
}

#[test]
fn env_is_applied_in_name_order_and_validated_once() {
    // lock-at-least-for above the default lock-at-most-for is fine once both are set.
    let config = env(&[
        ("BANDEJA_EVENTS_INBOX_LOCK_AT_MOST_FOR", "2m"),
        ("BANDEJA_EVENTS_INBOX_LOCK_AT_LEAST_FOR", "1m"),
    ]);
    let locks = config.map(|c| {
        (
            c.events_inbox.lock_at_least_for,
            c.events_inbox.lock_at_most_for,
        )
    });
    assert_eq!(locks.ok(), Some((secs(60), secs(120))));
}

#[test]
fn handler_timeouts_come_from_toml_and_env() {
    let text = "[events.inbox.handler-timeouts]\nnotification = \"PT10S\"\ninventory = \"2s\"";
    let expected = BTreeMap::from([
        ("inventory".to_owned(), secs(2)),
        ("notification".to_owned(), secs(10)),
    ]);
    let config = Config::from_toml_str(text).map_err(|e| e.to_string());
    assert_eq!(
        config.map(|c| c.events_inbox.handler_timeouts),
        Ok(expected.clone())
    );
    let value = "notification=10s, inventory = PT2S,";
    let config = env(&[("BANDEJA_EVENTS_INBOX_HANDLER_TIMEOUTS", value)]);
    let timeouts = config.map(|c| c.events_inbox.handler_timeouts);
    assert_eq!(timeouts.map_err(|e| e.to_string()), Ok(expected));
    // The environment replaces the whole table.
    let mut base = Config::default();
    base.commands_inbox = base.commands_inbox.handler_timeout_for("old", secs(1));
    let vars = [(
        "BANDEJA_COMMANDS_INBOX_HANDLER_TIMEOUTS".to_owned(),
        "billing=3s".to_owned(),
    )];
    let replaced = base
        .apply_env(vars)
        .map(|c| c.commands_inbox.handler_timeouts);
    let expected = BTreeMap::from([("billing".to_owned(), secs(3))]);
    assert_eq!(replaced.ok(), Some(expected));
}

#[test]
fn a_file_replaces_handler_timeouts_merges_topics_and_a_variable_replaces_both() {
    let code = Config::default().with_command_topic("billing", "billing.commands");
    let code = Config {
        events_inbox: code
            .events_inbox
            .clone()
            .handler_timeout_for("old", secs(1)),
        ..code
    };
    let text = "[events.inbox.handler-timeouts]\nnew = \"2s\"\n\
                    [commands.topics]\nshipping = \"shipping.cmds\"\n";
    let file = Source::toml_text(text, "<string>", None).map_err(|e| e.to_string());
    let layered = file.and_then(|f| load(code.clone(), &[f]).map_err(|e| e.to_string()));
    let tables = layered.map(|c| (c.events_inbox.handler_timeouts, c.command_topics));
    let expected = (
        BTreeMap::from([("new".to_owned(), secs(2))]),
        BTreeMap::from([
            ("billing".to_owned(), "billing.commands".to_owned()),
            ("shipping".to_owned(), "shipping.cmds".to_owned()),
        ]),
    );
    assert_eq!(tables, Ok(expected));
    let vars = [
        (
            "BANDEJA_EVENTS_INBOX_HANDLER_TIMEOUTS".to_owned(),
            "new=2s".to_owned(),
        ),
        (
            "BANDEJA_COMMANDS_TOPICS".to_owned(),
            "shipping=shipping.cmds".to_owned(),
        ),
    ];
    let replaced = code.apply_env(vars).map_err(|e| e.to_string());
    let tables = replaced.map(|c| (c.events_inbox.handler_timeouts, c.command_topics));
    let expected = (
        BTreeMap::from([("new".to_owned(), secs(2))]),
        BTreeMap::from([("shipping".to_owned(), "shipping.cmds".to_owned())]),
    );
    assert_eq!(tables, Ok(expected));
}

#[test]
fn a_file_handler_timeouts_table_replaces_the_one_set_in_code() {
    let code = Config::default();
    let code = Config {
        events_inbox: code
            .events_inbox
            .clone()
            .handler_timeout_for("old", secs(1)),
        ..code
    };
    let timeouts = |text: &str| {
        let file = Source::toml_text(text, "<string>", None).map_err(|e| e.to_string());
        file.and_then(|f| load(code.clone(), &[f]).map_err(|e| e.to_string()))
            .map(|c| c.events_inbox.handler_timeouts)
    };
    let untouched = BTreeMap::from([("old".to_owned(), secs(1))]);
    assert_eq!(timeouts("[events.inbox]\nbatch-size = 5"), Ok(untouched));
    for cleared in [
        "[events.inbox]\nhandler-timeouts = {}",
        "[events.inbox.handler-timeouts]",
        "[app.events.inbox-processor]\nhandler-timeouts = {}",
    ] {
        assert_eq!(timeouts(cleared), Ok(BTreeMap::new()), "{cleared}");
    }
    let replaced = BTreeMap::from([("other".to_owned(), secs(3))]);
    for other in [
        "[events.inbox.handler-timeouts]\nother = \"3s\"",
        "[events.inbox]\nhandler-timeouts = { other = \"3s\" }",
        "[app.events.inbox-processor.handler-timeouts]\nother = \"3s\"",
    ] {
        assert_eq!(timeouts(other), Ok(replaced.clone()), "{other}");
    }
    // Another group's table, or `commands.topics`, leaves it as it is.
    let text = "[commands.inbox.handler-timeouts]\nother = \"3s\"\n[commands.topics]\na = \"b\"";
    assert_eq!(
        timeouts(text),
        Ok(BTreeMap::from([("old".to_owned(), secs(1))]))
    );
}

#[test]
fn bad_handler_timeouts_name_the_key() {
    let toml_cases = [
        (
            "[events.inbox]\nhandler-timeouts = \"10s\"",
            "events.inbox.handler-timeouts",
            "expected a table of subscriber = duration",
        ),
        (
            "[events.inbox.handler-timeouts]\nslow = 5",
            "events.inbox.handler-timeouts.slow",
            "a bare number has no unit",
        ),
        (
            "[events.inbox.handler-timeouts]\nslow = \"0s\"",
            "events.inbox.handler-timeouts.slow",
            "greater than zero",
        ),
        (
            "[commands.outbox.handler-timeouts]\nslow = \"1s\"",
            "commands.outbox.handler-timeouts.slow",
            "an outbox has no subscribers",
        ),
    ];
    for (text, key, reason_part) in toml_cases {
        let (found, _, reason) = invalid_value(Config::from_toml_str(text));
        assert_eq!(found, key, "{text}");
        assert!(reason.contains(reason_part), "{text}: {reason}");
    }
    let name = "BANDEJA_EVENTS_INBOX_HANDLER_TIMEOUTS";
    for (value, reason_part) in [
        ("slow", "missing `=`"),
        ("=1s", "empty subscriber name"),
        ("slow=soon", "expected a duration"),
        ("slow=1s,slow=2s", "listed twice"),
    ] {
        let (key, found, reason) = invalid_value(env(&[(name, value)]));
        assert_eq!((key.as_str(), found.as_str()), (name, value));
        assert!(reason.contains(reason_part), "{value}: {reason}");
    }
    let zero = env(&[(name, "slow=0s")]);
    assert_eq!(invalid_value(zero).0, "events.inbox.handler-timeouts.slow");
}

/// The keys seed 000 lists for each of its four groups, with a value each (none the
/// default of any group).
const SEED_KEYS: [(&str, &str); 7] = [
    ("enabled", "false"),
    ("polling-interval", "\"PT7S\""),
    ("polling-initial-delay", "\"PT3S\""),
    ("lock-at-least-for", "\"PT11S\""),
    ("lock-at-most-for", "\"PT41S\""),
    ("batch-size", "77"),
    ("max-retries", "9"),
];

/// `group` with the values of [`SEED_KEYS`].
fn with_seed_values(group: BoxKind) -> WorkerConfig {
    WorkerConfig {
        enabled: Enabled::Off,
        polling_interval: secs(7),
        polling_initial_delay: secs(3),
        lock_at_least_for: secs(11),
        lock_at_most_for: secs(41),
        batch_size: 77,
        max_retries: 9,
        ..group.defaults()
    }
}

fn seed_table(name: &str) -> String {
    let lines: Vec<String> = SEED_KEYS
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    format!("[{name}]\n{}\n", lines.join("\n"))
}

#[test]
fn each_seed_group_name_sets_its_group() {
    let names = [
        ("app.events.outbox-processor", BoxKind::OutboxEvents),
        ("app.events.inbox-processor", BoxKind::InboxEvents),
        ("app.commands.outbox-dispatcher", BoxKind::OutboxCommands),
        ("app.commands.inbox-processor", BoxKind::InboxCommands),
    ];
    for (name, group) in names {
        assert_eq!(group.seed_key(), name);
        let seed = Config::from_toml_str(&seed_table(name)).map_err(|e| e.to_string());
        let ours = Config::from_toml_str(&seed_table(group.key())).map_err(|e| e.to_string());
        let mut expected = Config::default();
        *expected.group_mut(group) = with_seed_values(group);
        assert_eq!(seed, Ok(expected.clone()), "{name}");
        assert_eq!(ours, Ok(expected), "{}", group.key());
    }
    // Keys bandeja adds to a group work under the seed's name too.
    let text = "[app.events.inbox-processor]\nhandler-timeout = \"1m\"\nmax-takeovers = 5\n\
                    [app.events.inbox-processor.handler-timeouts]\nslow = \"2m\"";
    let inbox = Config::from_toml_str(text).map(|c| c.events_inbox);
    let expected = WorkerConfig::events_inbox_defaults()
        .handler_timeout(secs(60))
        .max_takeovers(5)
        .handler_timeout_for("slow", secs(120));
    assert_eq!(inbox.map_err(|e| e.to_string()), Ok(expected));
}

#[test]
fn the_seed_topics_name_sets_the_routing_table() {
    let text = "[app.commands.topics]\nbilling = \"billing.commands\"\n\
                    [commands.topics]\nshipping = \"shipping.cmds\"";
    let expected = Config::default()
        .with_command_topic("billing", "billing.commands")
        .with_command_topic("shipping", "shipping.cmds");
    let config = Config::from_toml_str(text).map_err(|e| e.to_string());
    assert_eq!(config, Ok(expected));
    let config = env(&[("BANDEJA_APP_COMMANDS_TOPICS", "billing=billing.commands")]);
    let expected = Config::default().with_command_topic("billing", "billing.commands");
    assert_eq!(config.map_err(|e| e.to_string()), Ok(expected));
    let (key, _, reason) = invalid_value(env(&[("BANDEJA_APP_COMMANDS_TOPICS", "billing")]));
    assert_eq!(key, "BANDEJA_APP_COMMANDS_TOPICS");
    assert!(reason.contains("missing `=`"), "{reason}");
}

#[test]
fn each_seed_group_name_has_an_environment_form() {
    let names = [
        (
            "BANDEJA_APP_EVENTS_OUTBOX_PROCESSOR_",
            BoxKind::OutboxEvents,
        ),
        ("BANDEJA_APP_EVENTS_INBOX_PROCESSOR_", BoxKind::InboxEvents),
        (
            "BANDEJA_APP_COMMANDS_OUTBOX_DISPATCHER_",
            BoxKind::OutboxCommands,
        ),
        (
            "BANDEJA_APP_COMMANDS_INBOX_PROCESSOR_",
            BoxKind::InboxCommands,
        ),
    ];
    for (prefix, group) in names {
        let vars: Vec<(String, String)> = SEED_KEYS
            .iter()
            .map(|(key, value)| {
                let name = format!("{prefix}{}", key.to_ascii_uppercase().replace('-', "_"));
                (name, value.trim_matches('"').to_owned())
            })
            .collect();
        let config = Config::default().apply_env(vars).map_err(|e| e.to_string());
        let mut expected = Config::default();
        *expected.group_mut(group) = with_seed_values(group);
        assert_eq!(config, Ok(expected), "{prefix}");
    }
    let (key, value, reason) = invalid_value(env(&[(
        "BANDEJA_APP_EVENTS_INBOX_PROCESSOR_POLLING_INTERVAL",
        "soon",
    )]));
    assert_eq!(
        (key.as_str(), value.as_str()),
        (
            "BANDEJA_APP_EVENTS_INBOX_PROCESSOR_POLLING_INTERVAL",
            "soon"
        )
    );
    assert!(reason.contains("expected a duration"), "{reason}");
}

/// The two (name, value) pairs of a `Conflict`, sorted, and its message.
fn conflict(result: Result<Config, ConfigError>) -> ([(String, String); 2], String) {
    let error = result.err();
    let message = error.as_ref().map(ToString::to_string).unwrap_or_default();
    match error {
        Some(e) if e.kind() == ConfigErrorKind::Conflict => {
            let text = |s: Option<&str>| s.unwrap_or_default().to_owned();
            let mut pairs = [
                (text(e.key()), text(e.value())),
                (text(e.other_key()), text(e.other_value())),
            ];
            pairs.sort();
            (pairs, message)
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
}

fn names(pairs: [(String, String); 2]) -> [String; 2] {
    pairs.map(|(name, _)| name)
}

#[test]
fn one_setting_under_both_names_with_different_values_is_a_conflict() {
    let text = "[events.outbox]\nbatch-size = 10\n[app.events.outbox-processor]\nbatch-size = 20";
    let (pairs, message) = conflict(Config::from_toml_str(text));
    assert_eq!(
        pairs,
        [
            (
                "app.events.outbox-processor.batch-size".to_owned(),
                "20".to_owned()
            ),
            ("events.outbox.batch-size".to_owned(), "10".to_owned()),
        ]
    );
    for part in [
        "`app.events.outbox-processor.batch-size`",
        "`events.outbox.batch-size`",
        "keep one of them",
    ] {
        assert!(message.contains(part), "{message}");
    }

    let text = "[commands.topics]\nbilling = \"a\"\n[app.commands.topics]\nbilling = \"b\"";
    let (pairs, _) = conflict(Config::from_toml_str(text));
    assert_eq!(
        names(pairs),
        ["app.commands.topics.billing", "commands.topics.billing"]
    );

    let (pairs, _) = conflict(env(&[
        ("BANDEJA_COMMANDS_INBOX_MAX_RETRIES", "1"),
        ("BANDEJA_APP_COMMANDS_INBOX_PROCESSOR_MAX_RETRIES", "2"),
    ]));
    assert_eq!(
        names(pairs),
        [
            "BANDEJA_APP_COMMANDS_INBOX_PROCESSOR_MAX_RETRIES",
            "BANDEJA_COMMANDS_INBOX_MAX_RETRIES"
        ]
    );
    let (pairs, _) = conflict(env(&[
        ("BANDEJA_COMMANDS_TOPICS", "billing=a"),
        ("BANDEJA_APP_COMMANDS_TOPICS", "billing=b"),
    ]));
    assert_eq!(
        names(pairs),
        ["BANDEJA_APP_COMMANDS_TOPICS", "BANDEJA_COMMANDS_TOPICS"]
    );

    // The same value under both names (however it is spelt) is no conflict.
    let text = "[events.inbox]\npolling-interval = \"5s\"\n\
                    [app.events.inbox-processor]\npolling-interval = \"PT5S\"";
    let polling = Config::from_toml_str(text).map(|c| c.events_inbox.polling_interval);
    assert_eq!(polling.map_err(|e| e.to_string()), Ok(secs(5)));
    let same = env(&[
        ("BANDEJA_EVENTS_INBOX_ENABLED", "true"),
        ("BANDEJA_APP_EVENTS_INBOX_PROCESSOR_ENABLED", "yes"),
    ]);
    assert_eq!(same.map(|c| c.events_inbox.enabled).ok(), Some(Enabled::On));

    // Different sources layer as usual: the environment wins over the file.
    let path = std::env::temp_dir().join(format!("bandeja-seed-{}.toml", uuid::Uuid::new_v4()));
    let written = std::fs::write(&path, "[events.outbox]\nbatch-size = 10\n");
    assert!(written.is_ok(), "{written:?}");
    let vars = [(
        "BANDEJA_APP_EVENTS_OUTBOX_PROCESSOR_BATCH_SIZE".to_owned(),
        "20".to_owned(),
    )];
    let layered = Config::default().load_over_with_env(Some(&path), vars);
    let _ = std::fs::remove_file(&path);
    let batch = layered.map(|c| c.events_outbox.batch_size);
    assert_eq!(batch.map_err(|e| e.to_string()), Ok(20));
}

#[test]
fn unknown_keys_in_the_seed_names_are_named() {
    let cases = [
        (
            "[app.events.outbox-processor]\ncron = \"0 * * * *\"",
            "app.events.outbox-processor.cron",
            "in `app.events.outbox-processor`",
        ),
        (
            "[app.events.inbox-processor]\nbach-size = 3",
            "app.events.inbox-processor.bach-size",
            "did you mean `app.events.inbox-processor.batch-size`?",
        ),
        (
            "[app.events.outbox]\nbatch-size = 3",
            "app.events.outbox",
            "`outbox-processor`, `inbox-processor` in `app.events`",
        ),
        (
            "[app.commands.outbox-processor]\nbatch-size = 3",
            "app.commands.outbox-processor",
            "`outbox-dispatcher`, `inbox-processor`, `topics` in `app.commands`",
        ),
        (
            "[app.security]\nenabled = true",
            "app.security",
            "`events`, `commands` in `app`",
        ),
    ];
    for (text, key, hint) in cases {
        let (found, message) = unknown_key(Config::from_toml_str(text));
        assert_eq!(found, key, "{text}");
        assert!(message.contains(hint), "{message}");
    }
    let (found, message) = unknown_key(env(&[(
        "BANDEJA_APP_COMMANDS_OUTBOX_DISPATCHER_BATCHSIZE",
        "3",
    )]));
    assert_eq!(found, "BANDEJA_APP_COMMANDS_OUTBOX_DISPATCHER_BATCHSIZE");
    assert!(
        message.contains("did you mean `BANDEJA_APP_COMMANDS_OUTBOX_DISPATCHER_BATCH_SIZE`?"),
        "{message}"
    );
    let (_, message) = unknown_key(env(&[("BANDEJA_APP_COMMANDS_TOPIC", "a=b")]));
    assert!(
        message.contains("did you mean `BANDEJA_APP_COMMANDS_TOPICS`?"),
        "{message}"
    );
}

/// A file in the temp dir, removed on drop.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(text: &str) -> TempFile {
        let name = format!("bandeja-config-{}.toml", uuid::Uuid::new_v4());
        let path = std::env::temp_dir().join(name);
        let written = std::fs::write(&path, text);
        assert!(written.is_ok(), "{written:?}");
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The file of an error in a file, the error and its message.
fn in_file(result: Result<Config, ConfigError>) -> (std::path::PathBuf, ConfigError, String) {
    match result {
        Err(e) if e.file().is_some() && e.kind() != ConfigErrorKind::Io => {
            let message = e.to_string();
            let path = e.file().map(Path::to_path_buf).unwrap_or_default();
            (path, e, message)
        }
        other => panic!("expected an error in a file, got {other:?}"),
    }
}

#[test]
fn errors_in_a_file_name_the_file_and_the_key() {
    let misspelt = TempFile::new("[app.events.outbox-processor]\npoling-interval = \"5s\"\n");
    let (path, error, message) = in_file(Config::from_toml_file(&misspelt.0));
    assert_eq!(path, misspelt.0);
    assert_eq!(
        error.key(),
        Some("app.events.outbox-processor.poling-interval")
    );
    assert_eq!(error.kind(), ConfigErrorKind::UnknownKey, "{error:?}");
    let file = misspelt.0.display().to_string();
    assert!(message.contains(&file), "{message}");
    assert!(message.contains("did you mean `app.events.outbox-processor.polling-interval`?"));

    let bad_duration = TempFile::new("[events.inbox]\nlock-at-most-for = \"20 seconds\"\n");
    let result = Config::default().load_over_with_env(Some(&bad_duration.0), std::iter::empty());
    let (_, error, message) = in_file(result);
    assert_eq!(error.key(), Some("events.inbox.lock-at-most-for"));
    assert!(message.contains("expected a duration"), "{message}");
    assert!(message.contains(&bad_duration.0.display().to_string()));

    let conflicting = TempFile::new(
        "[commands.outbox]\nenabled = true\n[app.commands.outbox-dispatcher]\nenabled = false\n",
    );
    let (_, error, _) = in_file(Config::from_toml_file(&conflicting.0));
    assert_eq!(error.kind(), ConfigErrorKind::Conflict, "{error:?}");

    // A validation error about a setting the file alone made names the file and the
    // key as the file wrote it.
    let too_short = TempFile::new("[app.events.outbox-processor]\nlock-at-most-for = \"5s\"\n");
    let (_, error, message) = in_file(Config::from_toml_file(&too_short.0));
    assert_eq!(
        error.key(),
        Some("app.events.outbox-processor.lock-at-most-for")
    );
    assert!(message.contains("at least lock-at-least-for"), "{message}");
    let zero = TempFile::new("[app.events.inbox-processor.handler-timeouts]\nslow = \"0s\"\n");
    let (_, error, _) = in_file(Config::from_toml_file(&zero.0));
    assert_eq!(
        error.key(),
        Some("app.events.inbox-processor.handler-timeouts.slow")
    );
    // ... unless the environment set it too: then it is not the file's.
    let vars = [(
        "BANDEJA_EVENTS_OUTBOX_LOCK_AT_MOST_FOR".to_owned(),
        "6s".to_owned(),
    )];
    let result = Config::default().load_over_with_env(Some(&too_short.0), vars);
    let (key, value, _) = invalid_value(result);
    assert_eq!(
        (key.as_str(), value.as_str()),
        ("events.outbox.lock-at-most-for", "PT6S")
    );
    // From a string, the key as written, no file.
    let text = "[app.events.outbox-processor]\nlock-at-most-for = \"5s\"";
    let (key, _, _) = invalid_value(Config::from_toml_str(text));
    assert_eq!(key, "app.events.outbox-processor.lock-at-most-for");
}

#[test]
fn load_over_layers_code_then_file_then_env() {
    let file = TempFile::new("[app.events.inbox-processor]\nbatch-size = 20\nmax-retries = 5\n");
    let mut code = Config::default();
    code.events_inbox.polling_interval = secs(1);
    code.events_inbox.batch_size = 7;
    let vars = [(
        "BANDEJA_EVENTS_INBOX_MAX_RETRIES".to_owned(),
        "6".to_owned(),
    )];
    let inbox = code.load_over_with_env(Some(&file.0), vars).map(|c| {
        let i = c.events_inbox;
        (i.polling_interval, i.batch_size, i.max_retries)
    });
    assert_eq!(inbox.map_err(|e| e.to_string()), Ok((secs(1), 20, 6)));
    let none = Config::default().load_over_with_env(None, std::iter::empty());
    assert_eq!(none.ok(), Some(Config::default()));
}
