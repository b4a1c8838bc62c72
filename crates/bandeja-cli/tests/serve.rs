//! `bandeja serve` as a real process over a real SQLite file: it says where it listens
//! (one JSON line with `--json`), answers `/health` and `/boxes`, and refuses a
//! non-loopback address without a token.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use bandeja_conformance::fixtures::TempDir;
use bandeja_sqlite::SqliteStore;
use common::{bandeja, runtime, seed, SEEDED};

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_answers_health_and_boxes_on_the_address_it_prints() {
    let dir = TempDir::new("bandeja-cli");
    let url = dir.sqlite_url("boxes.db");
    bandeja(&["migrate", "--database", &url]).expect_code(0);
    runtime().block_on(async {
        let store = SqliteStore::connect(&url).await.expect("open");
        seed(&store).await;
        store.pool().close().await;
    });

    let mut server = Server(
        Command::new(env!("CARGO_BIN_EXE_bandeja"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--json",
                "--database",
                &url,
            ])
            .env_remove("BANDEJA_ADMIN_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start bandeja serve"),
    );
    let stdout = server.0.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the first line");
    let listening: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    let addr = listening["listen"].as_str().expect("listen").to_owned();
    assert_eq!(listening["token_generated"], true, "{listening}");
    let dashboard = listening["dashboard_url"].as_str().expect("dashboard_url");
    assert!(
        dashboard.starts_with(&format!("http://{addr}/#token=")),
        "{dashboard}"
    );

    let (health, boxes) = runtime().block_on(async {
        let client = reqwest::Client::new();
        let health = client
            .get(format!("http://{addr}/health"))
            .send()
            .await
            .expect("GET /health");
        let status = health.status().as_u16();
        let body = health.text().await.expect("health body");
        let boxes: serde_json::Value = client
            .get(format!("http://{addr}/boxes"))
            .send()
            .await
            .expect("GET /boxes")
            .json()
            .await
            .expect("boxes JSON");
        ((status, body), boxes)
    });
    assert_eq!(health.0, 200, "{}", health.1);
    assert!(health.1.contains("UP"), "{}", health.1);
    assert!(
        boxes.to_string().contains(&format!("\"failed\":{SEEDED}")),
        "{boxes:#}"
    );
}

#[test]
fn serve_refuses_a_public_address_without_a_token() {
    let dir = TempDir::new("bandeja-cli");
    let url = dir.sqlite_url("boxes.db");
    bandeja(&["migrate", "--database", &url]).expect_code(0);
    let run = bandeja(&["serve", "--listen", "0.0.0.0:0", "--database", &url]).expect_code(2);
    assert!(run.stderr.contains("without an admin token"), "{run:#?}");
}
