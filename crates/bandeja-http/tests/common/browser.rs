//! What the dashboard's browser tests share: chromedriver and a headless Chromium session
//! (Debian's, at `/usr/bin`, or `CHROMIUM` / `CHROMEDRIVER`), an axum app served on a free
//! port (the router nested in it as an application mounts it), reading the page, and the
//! fixtures the message browser is shown: FAILED orders, one message FAILED for two
//! subscribers.
//!
//! Without Chromium or chromedriver the tests fail when `CI=true` and are skipped otherwise.

use std::io::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use axum::Router;
use bandeja_conformance::fixtures::fast_config;
use bandeja_core::admin::Admin;
use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;
use bandeja_core::{BoxKind, Event, MessageId, MessageStatus, Store};
use bandeja_http::HttpOptions;
use bandeja_postgres::testing::in_ci;
use fantoccini::{Client, ClientBuilder, Locator};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{free_port, order, Flaky, OrderPlaced, WAIT};

/// The desktop window the tests use unless they say otherwise.
pub const DESKTOP: (u32, u32) = (1280, 900);

fn tool(variable: &str, default: &str) -> PathBuf {
    std::env::var_os(variable).map_or_else(|| PathBuf::from(default), PathBuf::from)
}

/// chromedriver, killed when dropped.
pub struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts chromedriver and waits until it accepts connections; `None` (after a notice)
/// when Chromium or chromedriver is missing outside CI.
pub async fn chromedriver() -> Option<Driver> {
    let (chromium, driver) = (
        tool("CHROMIUM", "/usr/bin/chromium"),
        tool("CHROMEDRIVER", "/usr/bin/chromedriver"),
    );
    if !chromium.exists() || !driver.exists() {
        let why = format!(
            "{} or {} is missing: apt-get install -y chromium chromium-driver",
            chromium.display(),
            driver.display()
        );
        assert!(!in_ci(), "the dashboard test needs a browser in CI: {why}");
        let _ = writeln!(
            std::io::stderr(),
            "notice: skipping the browser test: {why}"
        );
        return None;
    }
    let port = free_port();
    let child = Command::new(&driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", driver.display()));
    let driver = Driver { child, port };
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    eventually(WAIT, || async { TcpStream::connect(addr).ok().map(drop) })
        .await
        .expect("chromedriver accepts connections");
    Some(driver)
}

/// A headless Chromium session whose viewport is `width` × `height` CSS pixels (a phone's,
/// emulated, below 500 px wide).
pub async fn browser(driver: &Driver, (width, height): (u32, u32)) -> Client {
    let mut options = serde_json::json!({
        "binary": tool("CHROMIUM", "/usr/bin/chromium"),
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                 "--disable-dev-shm-usage", format!("--window-size={width},{height}")],
    });
    if width < 500 {
        // Chromium keeps a window at least 500 px wide: a phone's viewport is emulated.
        options["mobileEmulation"] = serde_json::json!({
            "deviceMetrics": { "width": width, "height": height, "pixelRatio": 1.0 },
        });
    }
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("goog:chromeOptions".to_owned(), options);
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a Chromium session")
}

/// The text of the first element matching `css`, if there is one.
pub async fn text_of(client: &Client, css: &str) -> Option<String> {
    let element = client.find(Locator::Css(css)).await.ok()?;
    element.text().await.ok()
}

/// Waits until the first element matching `css` has a text that `want` accepts; returns it.
pub async fn wait_text(client: &Client, css: &str, want: impl Fn(&str) -> bool) -> String {
    let found = eventually(WAIT, || async {
        text_of(client, css).await.filter(|text| want(text))
    })
    .await;
    match found {
        Ok(text) => text,
        Err(_) => {
            let last = text_of(client, css).await;
            panic!("{css} never showed the text expected; it shows {last:?}")
        }
    }
}

/// Runs `script` in the page and returns what it returns.
pub async fn run(client: &Client, script: &str) -> serde_json::Value {
    client
        .execute(script, Vec::new())
        .await
        .unwrap_or_else(|e| panic!("script failed ({e}): {script}"))
}

/// Clicks the first element matching `css`, waiting for it to appear.
pub async fn click(client: &Client, css: &str) {
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("cannot click {css}: {e}"));
}

/// The admin token every browser test serves the endpoints with.
pub const TOKEN: &str = "dashboard-test-token";

/// What a served app's task ends with.
type Ran = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// An app served on a free loopback port until [`Served::stop`].
pub struct Served {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Ran>,
}

impl Served {
    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The dashboard at the root with [`TOKEN`] in the fragment, as `bandeja serve` prints it.
    pub fn dashboard(&self) -> String {
        self.url(&format!("/#token={TOKEN}"))
    }

    /// Stops serving and waits until the server has.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task
            .await
            .expect("server task")
            .expect("the server ran");
    }
}

/// Serves `app` with `axum::serve` on a free loopback port.
pub async fn serve(app: Router) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let addr = listener.local_addr().expect("address");
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .map_err(Into::into)
    });
    Served { addr, stop, task }
}

/// Serves `admin`'s router with [`TOKEN`], nested under `prefix` as an application mounts
/// it (`""`: at the root).
pub async fn serve_router<A: Admin>(admin: A, prefix: &str) -> Served {
    let router = bandeja_http::router(admin, HttpOptions::new().token(TOKEN));
    if prefix.is_empty() {
        serve(router).await
    } else {
        serve(Router::new().nest(prefix, router)).await
    }
}

/// Serves `admin` with [`TOKEN`] as `bandeja serve` does: [`bandeja_http::bind`] on a free
/// loopback port, then `Server::run`; the dashboard address it gives is [`Served::dashboard`].
pub async fn serve_as_bandeja_serve<A: Admin>(admin: A) -> Served {
    let server = bandeja_http::bind(
        admin,
        HttpOptions::new().token(TOKEN),
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("bind");
    let addr = server.local_addr();
    let dashboard = server.dashboard_url();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        server
            .run(async {
                let _ = stopped.await;
            })
            .await
            .map_err(Into::into)
    });
    let served = Served { addr, stop, task };
    assert_eq!(dashboard, served.dashboard(), "the dashboard address");
    served
}

/// A headless Chromium session of `size` (see [`browser`]) on `url`.
pub async fn open(driver: &Driver, size: (u32, u32), url: &str) -> Client {
    let client = browser(driver, size).await;
    client.goto(url).await.expect("open the dashboard");
    client
}

/// The status of message `id`'s row in `box_kind` for `subscriber` (`None` for an outbox
/// row), if the box holds it.
pub async fn row_status<S: Inspect>(
    store: &S,
    box_kind: BoxKind,
    id: MessageId,
    subscriber: Option<&str>,
) -> Option<MessageStatus> {
    store
        .rows(box_kind)
        .await
        .ok()?
        .into_iter()
        .find(|r| r.message.record.id == id && r.message.subscriber.as_deref() == subscriber)
        .map(|r| r.message.status)
}

/// Waits until `subscriber`'s row of `id` in the events inbox is `status`.
pub async fn wait_for_row<S: Inspect>(
    store: &S,
    id: MessageId,
    subscriber: &str,
    status: MessageStatus,
) {
    eventually(WAIT, || async {
        (row_status(store, BoxKind::InboxEvents, id, Some(subscriber)).await == Some(status))
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{subscriber}'s row of {id} never reached {status}: {e:?}"));
}

/// Starts a runtime on `store` with two subscribers of [`OrderPlaced`], `billing` and
/// `shipping`, each failing order `n` once permanently; emits it and waits until both its
/// inbox rows are FAILED. A retried row then completes.
pub async fn failed_for_two_subscribers<S: Store + Inspect>(
    store: &S,
    n: u64,
) -> (bandeja_core::Running, Event<OrderPlaced>) {
    let bandeja = bandeja_core::Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<OrderPlaced, _>("billing", Flaky::failing(&[n]))
        .on_event::<OrderPlaced, _>("shipping", Flaky::failing(&[n]))
        .build()
        .expect("valid runtime");
    let running = bandeja.start().await.expect("start");
    let event = order(n);
    bandeja.emit(&event).await.expect("emit");
    for subscriber in ["billing", "shipping"] {
        wait_for_row(store, event.id, subscriber, MessageStatus::Failed).await;
    }
    (running, event)
}

/// Starts a runtime on `store` (`billing` subscribed) that fails the orders `failing`
/// permanently and handles `handled`; emits them all and waits until each failing one is
/// FAILED and each handled one COMPLETED. Returns the runtime and the failing orders'
/// events, in the order given.
pub async fn orders<S: Store + Inspect>(
    store: &S,
    failing: &[u64],
    handled: &[u64],
) -> (bandeja_core::Running, Vec<Event<OrderPlaced>>) {
    let bandeja = super::runtime(store.clone(), Flaky::failing(failing));
    let running = bandeja.start().await.expect("start");
    let mut failed = Vec::new();
    let mut done = Vec::new();
    for &n in failing.iter().chain(handled) {
        let event = order(n);
        bandeja.emit(&event).await.expect("emit");
        if failing.contains(&n) {
            failed.push(event);
        } else {
            done.push(event);
        }
    }
    for event in &failed {
        wait_for_row(store, event.id, "billing", MessageStatus::Failed).await;
    }
    for event in &done {
        wait_for_row(store, event.id, "billing", MessageStatus::Completed).await;
    }
    (running, failed)
}
