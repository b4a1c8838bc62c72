//! Helpers shared by the shop's integration tests: a temporary directory, the shop binary
//! as a child process (SIGKILLed on drop, its log printed when the test fails), HTTP calls
//! and reads of the SQLite file. [`in_process`] runs the shop inside the test instead, for
//! tests that need no real process.
#![allow(dead_code)] // each test file uses its own part of the helpers

pub(crate) mod in_process;
pub(crate) mod services;

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

/// How long the shop may take to print its address.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// A fresh directory, removed on drop unless the test failed (then it is kept and named).
pub(crate) struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub(crate) fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("shop-{name}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&path).expect("create a temporary directory");
        TempDir { path }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The `sqlite://` URL of a database file in this directory.
    pub(crate) fn sqlite_url(&self, file: &str) -> String {
        format!("sqlite://{}", self.path.join(file).display())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("test files kept in {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// The shop binary running as a child process.
pub(crate) struct Shop {
    child: Option<Child>,
    base: String,
    log: PathBuf,
}

impl Shop {
    /// Starts `shop --listen 127.0.0.1:0 --database DATABASE` with `env` (and no inherited
    /// `BANDEJA_*` or `SHOP_*` variable), appending its log to `log`, and waits for the
    /// line that gives its address.
    pub(crate) fn start(database: &str, env: &[(&str, &str)], log: &Path) -> Shop {
        let log_file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("open the shop log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_shop"));
        command
            .args(["--listen", "127.0.0.1:0", "--database", database])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file));
        for (name, _) in std::env::vars() {
            if name.starts_with("BANDEJA_") || name.starts_with("SHOP_") || name == "DATABASE_URL" {
                command.env_remove(name);
            }
        }
        command.env("RUST_LOG", "info").envs(env.iter().copied());
        let mut child = command.spawn().expect("start the shop binary");
        let stdout = child.stdout.take().expect("the shop's stdout");
        let mut shop = Shop {
            child: Some(child),
            base: String::new(),
            log: log.to_path_buf(),
        };
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("shop listening on ") {
                    let _ = sender.send(url.trim().to_owned());
                }
            }
        });
        match receiver.recv_timeout(STARTUP_TIMEOUT) {
            Ok(url) => shop.base = url,
            Err(e) => panic!(
                "the shop did not print its address ({e}); log:\n{}",
                shop.log_text()
            ),
        }
        shop
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// SIGKILL (`kill -9`): no shutdown hook runs.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The log written so far.
    pub(crate) fn log_text(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = File::open(&self.log) {
            let _ = file.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for Shop {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "---- shop log ({}) ----\n{}",
                self.log.display(),
                self.log_text()
            );
        }
    }
}

/// Waits until `check` gives `Some`, for at most `timeout`; panics naming `what` otherwise.
pub(crate) async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    match bandeja::testing::eventually(timeout, check).await {
        Ok(value) => value,
        Err(e) => panic!("waiting for {what}: {e}"),
    }
}

/// `POST /orders` with `body`.
pub(crate) async fn post_order(
    client: &reqwest::Client,
    shop: &Shop,
    body: &Value,
) -> reqwest::Response {
    client
        .post(shop.url("/orders"))
        .json(body)
        .send()
        .await
        .expect("POST /orders")
}

/// Places an order and checks the 201; returns the order (JSON).
pub(crate) async fn place_order(
    client: &reqwest::Client,
    shop: &Shop,
    customer: &str,
    items: &[(&str, i64)],
) -> Value {
    let response = post_order(client, shop, &order_body(customer, items)).await;
    assert_eq!(response.status(), 201, "POST /orders");
    response.json().await.expect("the order as JSON")
}

/// The body of `POST /orders`: `customer` orders `items` (sku, quantity).
pub(crate) fn order_body(customer: &str, items: &[(&str, i64)]) -> Value {
    let items: Vec<Value> = items
        .iter()
        .map(|(sku, quantity)| json!({ "sku": sku, "quantity": quantity }))
        .collect();
    json!({ "customer": customer, "items": items })
}

/// The order id of an order answered by the API.
pub(crate) fn order_id(order: &Value) -> i64 {
    order["id"].as_i64().expect("the order has a numeric id")
}

/// `GET /stock/{sku}` → available units.
pub(crate) async fn stock(client: &reqwest::Client, shop: &Shop, sku: &str) -> i64 {
    let response = client
        .get(shop.url(&format!("/stock/{sku}")))
        .send()
        .await
        .expect("GET /stock");
    assert_eq!(response.status(), 200, "GET /stock/{sku}");
    let body: Value = response.json().await.expect("stock as JSON");
    body["available"].as_i64().expect("available units")
}

/// `GET /orders/{id}` → the order (JSON).
pub(crate) async fn get_order(client: &reqwest::Client, shop: &Shop, id: i64) -> Value {
    let response = client
        .get(shop.url(&format!("/orders/{id}")))
        .send()
        .await
        .expect("GET /orders/{id}");
    assert_eq!(response.status(), 200, "GET /orders/{id}");
    response.json().await.expect("the order as JSON")
}

/// Waits until `GET /orders/{id}` shows `status` (for at most `timeout`); the order.
pub(crate) async fn wait_for_status(
    client: &reqwest::Client,
    shop: &Shop,
    id: i64,
    status: &str,
    timeout: Duration,
) -> Value {
    wait_for(&format!("order {id} {status}"), timeout, || async {
        let order = get_order(client, shop, id).await;
        (order["status"] == status).then_some(order)
    })
    .await
}

/// A pool on an existing SQLite file (the shop's), to look at its tables.
pub(crate) async fn open_sqlite(database_url: &str) -> SqlitePool {
    let path = database_url.trim_start_matches("sqlite://");
    SqlitePoolOptions::new()
        .max_connections(2)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(path)
                .journal_mode(SqliteJournalMode::Wal),
        )
        .await
        .expect("open the shop's SQLite file")
}

/// Status and retry count of the inbox row of `subscriber` for order `order_id`.
pub(crate) async fn inbox_row(
    pool: &SqlitePool,
    order_id: i64,
    subscriber: &str,
) -> Option<(String, i64)> {
    sqlx::query_as(
        "SELECT status, retry_count FROM inbox_events WHERE aggregate_id = ? AND subscriber = ?",
    )
    .bind(order_id.to_string())
    .bind(subscriber)
    .fetch_optional(pool)
    .await
    .expect("read inbox_events")
}

/// Rows of `table` (which has an `order_id` column) for order `order_id`.
pub(crate) async fn rows_for_order(pool: &SqlitePool, table: &str, order_id: i64) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table} WHERE order_id = ?"))
        .bind(order_id)
        .fetch_one(pool)
        .await
        .expect("count rows")
}

/// `SELECT count(*) FROM table`.
pub(crate) async fn count_rows(pool: &SqlitePool, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(pool)
        .await
        .expect("count rows")
}
