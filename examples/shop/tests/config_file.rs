//! bandeja's configuration file (`--config FILE`, `BANDEJA_CONFIG`): a misspelt key or a bad
//! duration stops the shop at start with an error naming the key and the file; a good file
//! written with seed 000's names (the Java archetype's `app.*` keys) takes effect.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    inbox_row, open_sqlite, order_id, place_order, stock, wait_for, wait_for_status, Shop, TempDir,
};

const WAIT: Duration = Duration::from_secs(20);

/// How long a refused start may take before the test gives up on it (it should take well
/// under a second; a shop that ignored the file would run until killed).
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `shop --listen 127.0.0.1:0 --database DATABASE ARGS` with `env` (and no inherited
/// `BANDEJA_*` or `SHOP_*` variable) and expects it to stop by itself: its exit code and
/// stderr. Panics (after killing it) if it is still running after [`EXIT_TIMEOUT`].
fn start_expecting_exit(database: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let stderr_path = std::env::temp_dir().join(format!("shop-stderr-{}", uuid::Uuid::new_v4()));
    let stderr = std::fs::File::create(&stderr_path).expect("create the stderr file");
    let mut command = Command::new(env!("CARGO_BIN_EXE_shop"));
    command
        .args(["--listen", "127.0.0.1:0", "--database", database])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr));
    for (name, _) in std::env::vars() {
        if name.starts_with("BANDEJA_") || name.starts_with("SHOP_") || name == "DATABASE_URL" {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied());
    let mut child = command.spawn().expect("start the shop binary");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the shop") {
            break status;
        }
        if started.elapsed() > EXIT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            let _ = std::fs::remove_file(&stderr_path);
            panic!("the shop started although its configuration is bad; stderr:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let _ = std::fs::remove_file(&stderr_path);
    (status.code().unwrap_or(-1), text)
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write the configuration file");
}

#[test]
fn a_config_file_with_a_misspelt_key_stops_the_shop_naming_the_key_and_the_file() {
    let dir = TempDir::new("config-misspelt");
    let file = dir.path().join("bandeja.toml");
    write(
        &file,
        "[app.events.inbox-processor]\nbatch-size = 10\nmax-retires = 5\n",
    );
    let database = dir.sqlite_url("shop.db");
    let file_arg = file.display().to_string();
    let (code, stderr) = start_expecting_exit(&database, &["--config", &file_arg], &[]);
    assert_ne!(code, 0, "{stderr}");
    for part in [
        "unknown configuration key `app.events.inbox-processor.max-retires`",
        "did you mean `app.events.inbox-processor.max-retries`?",
        file_arg.as_str(),
    ] {
        assert!(stderr.contains(part), "`{part}` missing from:\n{stderr}");
    }
}

#[test]
fn a_config_file_with_a_bad_duration_stops_the_shop_naming_the_key_and_the_file() {
    let dir = TempDir::new("config-duration");
    let file = dir.path().join("bandeja.toml");
    write(
        &file,
        "[events.outbox]\npolling-interval = \"five seconds\"\n",
    );
    let database = dir.sqlite_url("shop.db");
    let file_arg = file.display().to_string();
    // Through the variable this time, as a container would pass it.
    let (code, stderr) = start_expecting_exit(&database, &[], &[("BANDEJA_CONFIG", &file_arg)]);
    assert_ne!(code, 0, "{stderr}");
    for part in [
        "`events.outbox.polling-interval`",
        "five seconds",
        "expected a duration",
        file_arg.as_str(),
    ] {
        assert!(stderr.contains(part), "`{part}` missing from:\n{stderr}");
    }

    // The same key under both its names with different values is refused too.
    write(
        &file,
        "[events.outbox]\nbatch-size = 10\n[app.events.outbox-processor]\nbatch-size = 20\n",
    );
    let (code, stderr) = start_expecting_exit(&database, &["--config", &file_arg], &[]);
    assert_ne!(code, 0, "{stderr}");
    for part in [
        "`app.events.outbox-processor.batch-size`",
        "`events.outbox.batch-size`",
    ] {
        assert!(stderr.contains(part), "`{part}` missing from:\n{stderr}");
    }

    // A file that is not there is not silently skipped either.
    let missing = dir.path().join("missing.toml").display().to_string();
    let (code, stderr) = start_expecting_exit(&database, &["--config", &missing], &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains(&missing), "{stderr}");
}

/// The notification handler waits 10 s before writing; the file, in the seed's names,
/// cuts each attempt at 1 s and allows no retry: the notification row is FAILED after one
/// attempt (with the shop's defaults it would wait the 10 s and complete), while the
/// order's saga (commands, which the file leaves alone) completes and takes the stock.
#[tokio::test]
async fn a_good_config_file_in_the_seeds_names_takes_effect() {
    let dir = TempDir::new("config-good");
    let file = dir.path().join("application.toml");
    write(
        &file,
        "# seed 000's keys (the Java archetype's application.yml, as TOML)\n\
         [app.events.outbox-processor]\n\
         polling-interval = \"PT1S\"\n\
         [app.events.inbox-processor]\n\
         enabled = true\n\
         max-retries = 0\n\
         handler-timeout = \"PT1S\"\n",
    );
    let database = dir.sqlite_url("shop.db");
    let file_arg = file.display().to_string();
    let shop = Shop::start(
        &database,
        &[
            ("BANDEJA_CONFIG", &file_arg),
            ("SHOP_NOTIFICATION_DELAY", "10s"),
        ],
        &dir.path().join("shop.log"),
    );
    let client = reqwest::Client::new();
    let db = open_sqlite(&database).await;

    let before = stock(&client, &shop, "MS-001").await;
    let order = place_order(&client, &shop, "alice", &[("MS-001", 1)]).await;
    let id = order_id(&order);
    let failed = wait_for(
        "the notification row to fail its one attempt",
        WAIT,
        || async {
            inbox_row(&db, id, "notification")
                .await
                .filter(|(status, _)| status == "FAILED")
        },
    )
    .await;
    assert_eq!(failed.1, 0, "max-retries = 0: no retry was spent");
    let error: Option<String> = sqlx::query_scalar(
        "SELECT last_error FROM inbox_events WHERE aggregate_id = ? AND subscriber = 'notification'",
    )
    .bind(id.to_string())
    .fetch_one(&db)
    .await
    .expect("read last_error");
    let error = error.unwrap_or_default();
    assert!(error.contains("handler timed out after PT1S"), "{error}");
    wait_for_status(&client, &shop, id, "COMPLETED", WAIT).await;
    assert_eq!(stock(&client, &shop, "MS-001").await, before - 1);
}
