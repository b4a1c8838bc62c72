//! The dashboard in a real browser: Debian's headless Chromium, driven through WebDriver
//! (chromedriver), against the server as `bandeja serve` runs it. A FAILED message shows
//! with its last error, its retries and its lease takeovers apart, the boxes with their rows
//! taken over; clicking its Retry button sends it back and the running worker completes it,
//! which the page shows. The Replay outbox control counts, asks and sends COMPLETED outbox
//! messages again.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (`apt-get install chromium
//! chromium-driver`; `.ci/run` installs them), or `CHROMIUM` / `CHROMEDRIVER` pointing
//! elsewhere. Without them the test fails when `CI=true` and is skipped otherwise.

mod common;

use std::io::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use bandeja_core::store::{Outcome, Resolution, Store};
use bandeja_core::testing::eventually;
use bandeja_core::{BoxKind, MessageStatus};
use bandeja_http::HttpOptions;
use bandeja_postgres::testing::in_ci;
use common::{
    free_port, sqlite_store, start_with_a_failed_order, status_of, two_rows_taken_over, WAIT,
};
use fantoccini::{Client, ClientBuilder, Locator};

const TOKEN: &str = "dashboard-test-token";

fn tool(variable: &str, default: &str) -> PathBuf {
    std::env::var_os(variable).map_or_else(|| PathBuf::from(default), PathBuf::from)
}

/// chromedriver, killed when dropped.
struct Driver {
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
async fn chromedriver() -> Option<Driver> {
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

async fn browser(driver: &Driver) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        serde_json::json!({
            "binary": tool("CHROMIUM", "/usr/bin/chromium"),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1280,900"],
        }),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a Chromium session")
}

/// The text of the first element matching `css`, if there is one.
async fn text_of(client: &Client, css: &str) -> Option<String> {
    let element = client.find(Locator::Css(css)).await.ok()?;
    element.text().await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_button_sends_a_failed_message_back_and_the_page_shows_it_completed() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    // Before the workers start: an outbox row taken over once and then FAILED, and one taken
    // over and then COMPLETED (which no counter keeps).
    let (taken_failed, taken_done) = two_rows_taken_over(&store).await;
    let done = Outcome {
        id: taken_done,
        subscriber: None,
        resolution: Resolution::Completed,
    };
    store
        .resolve(BoxKind::OutboxEvents, "alive", &[done])
        .await
        .expect("complete the held row");
    let (running, event) = start_with_a_failed_order(&store, 42).await;

    let server = bandeja_http::bind(
        store.clone(),
        HttpOptions::new().token(TOKEN),
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("bind");
    let url = server.dashboard_url();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));

    let client = browser(&driver).await;
    client.goto(&url).await.expect("open the dashboard");
    let id = event.id.to_string();
    let button_css = format!("#failed button.retry[data-id=\"{id}\"]");
    let button = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(&button_css))
        .await
        .expect("the FAILED message is listed with a Retry button");
    let error = text_of(&client, &format!("#failed tr[data-id=\"{id}\"] td.error")).await;
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("payment service refused order 42")),
        "last error shown: {error:?}"
    );
    let failed_count = text_of(
        &client,
        "#boxes tr[data-box=\"inbox_events\"] td:nth-child(4)",
    )
    .await;
    assert_eq!(failed_count.as_deref(), Some("1"));
    let retries_and_takeovers = |id: String| {
        let client = &client;
        async move {
            let row = format!("#failed tr[data-id=\"{id}\"]");
            (
                text_of(client, &format!("{row} td.retries")).await,
                text_of(client, &format!("{row} td.takeovers")).await,
            )
        }
    };
    assert_eq!(
        retries_and_takeovers(taken_failed.to_string()).await,
        (Some("0".to_owned()), Some("1".to_owned())),
        "the row taken over shows its takeover beside its retries"
    );
    assert_eq!(
        retries_and_takeovers(id.clone()).await,
        (Some("0".to_owned()), Some("0".to_owned()))
    );
    let taken_over = |box_name: &'static str| {
        let client = &client;
        async move {
            text_of(
                client,
                &format!("#boxes tr[data-box=\"{box_name}\"] td.taken-over"),
            )
            .await
        }
    };
    assert_eq!(taken_over("outbox_events").await.as_deref(), Some("1"));
    assert_eq!(taken_over("inbox_events").await.as_deref(), Some("0"));
    let address = client.current_url().await.expect("url");
    assert!(
        !address.as_str().contains("token="),
        "the token leaves the address bar: {address}"
    );

    button.click().await.expect("click Retry");
    let status_css = format!("#retried tr[data-id=\"{id}\"] td.status");
    let shown = eventually(WAIT, || async {
        text_of(&client, &status_css)
            .await
            .filter(|s| s.contains("COMPLETED"))
    })
    .await
    .expect("the page shows the retried message COMPLETED");
    assert!(shown.contains("billing"), "{shown}");
    assert_eq!(
        status_of(&store, BoxKind::InboxEvents, event.id).await,
        Some(MessageStatus::Completed)
    );
    eventually(WAIT, || async {
        client
            .find(Locator::Css(&button_css))
            .await
            .is_err()
            .then_some(())
    })
    .await
    .expect("the message leaves the FAILED list");
    let notice = text_of(&client, "#notice").await.unwrap_or_default();
    assert!(notice.contains("Retried"), "{notice}");

    client.close().await.expect("close the browser");
    let _ = stop.send(());
    serving.await.expect("server task").expect("server ran");
    running.shutdown().await;
}

/// Waits until the page shows a `confirm()` dialog, checks its text and accepts it.
async fn accept_confirm(client: &Client, needle: &str) {
    let text = eventually(WAIT, || async { client.get_alert_text().await.ok() })
        .await
        .expect("the page asks for confirmation");
    assert!(text.contains(needle), "{text}");
    client.accept_alert().await.expect("accept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_outbox_control_counts_asks_and_sends_the_messages_again() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let (running, failed) = start_with_a_failed_order(&store, 5).await;
    running.shutdown().await;
    // Its outbox row is COMPLETED (sent); the inbox row FAILED is not the outbox's business.
    assert_eq!(
        status_of(&store, BoxKind::OutboxEvents, failed.id).await,
        Some(MessageStatus::Completed)
    );

    let server = bandeja_http::bind(
        store.clone(),
        HttpOptions::new().token(TOKEN),
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("bind");
    let url = server.dashboard_url();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    let client = browser(&driver).await;
    client.goto(&url).await.expect("open the dashboard");
    let kind = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#replay-type"))
        .await
        .expect("the replay control");
    kind.send_keys("http_test.OrderPlaced")
        .await
        .expect("type the message type");
    client
        .find(Locator::Css("#replay-since"))
        .await
        .expect("since")
        .send_keys("1h")
        .await
        .expect("type the window");
    client
        .find(Locator::Css("#replay-outbox"))
        .await
        .expect("the Replay button")
        .click()
        .await
        .expect("click Replay");
    accept_confirm(&client, "Send 1 outbox message(s) again?").await;
    let note = eventually(WAIT, || async {
        text_of(&client, "#replay-note")
            .await
            .filter(|t| t.starts_with("Replayed"))
    })
    .await
    .expect("the page says what it replayed");
    assert!(note.contains("Replayed 1 outbox message(s)"), "{note}");
    assert_eq!(
        status_of(&store, BoxKind::OutboxEvents, failed.id).await,
        Some(MessageStatus::Pending),
        "sent again: PENDING until a worker relays it"
    );

    // No type and no window: the page asks before sending everything.
    kind.clear().await.expect("clear the type");
    client
        .find(Locator::Css("#replay-since"))
        .await
        .expect("since")
        .clear()
        .await
        .expect("clear the window");
    client
        .find(Locator::Css("#replay-outbox"))
        .await
        .expect("the Replay button")
        .click()
        .await
        .expect("click Replay");
    accept_confirm(&client, "EVERY completed outbox message").await;
    eventually(WAIT, || async {
        text_of(&client, "#replay-note")
            .await
            .filter(|t| t.contains("No COMPLETED outbox message matches"))
    })
    .await
    .expect("nothing left to replay: the one row is PENDING");

    client.close().await.expect("close the browser");
    let _ = stop.send(());
    serving.await.expect("server task").expect("server ran");
}

/// The subscriptions panel with the router mounted under a prefix (`/ops`): a subscription
/// the old version registered and nobody runs any more is flagged as waiting beside the
/// running one; its Retire button asks discard or keep, and keeping marks its rows FAILED
/// with the reason, after which the panel no longer lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_subscriptions_panel_flags_a_waiting_subscription_and_retires_it_under_a_prefix() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let version = |subscriber: &str| {
        bandeja_core::Bandeja::builder(store.clone())
            .config(bandeja_conformance::fixtures::fast_config())
            .on_event::<common::OrderPlaced, _>(subscriber, common::Flaky::default())
            .build()
            .expect("valid runtime")
    };
    version("billing")
        .start()
        .await
        .expect("start the old version")
        .shutdown()
        .await;
    let new = version("audit");
    let running = new.start().await.expect("start the new version");
    let event = common::order(7);
    new.emit(&event).await.expect("emit");

    let app = axum::Router::new().nest(
        "/ops",
        bandeja_http::router(store.clone(), HttpOptions::new().token(TOKEN)),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let addr = listener.local_addr().expect("address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });

    let client = browser(&driver).await;
    client
        .goto(&format!("http://{addr}/ops/dashboard#token={TOKEN}"))
        .await
        .expect("open the dashboard");
    let billing = "#subscriptions tr[data-subscriber=\"billing\"]";
    let state = eventually(WAIT, || async {
        text_of(&client, &format!("{billing} td.state"))
            .await
            .filter(|s| s == "waiting")
    })
    .await
    .expect("the subscription nobody runs is listed as waiting");
    assert_eq!(state, "waiting");
    assert_eq!(
        text_of(&client, &format!("{billing} td.pending"))
            .await
            .as_deref(),
        Some("1")
    );
    assert_eq!(
        text_of(&client, &format!("{billing} td.processes"))
            .await
            .as_deref(),
        Some("none")
    );
    let audit = "#subscriptions tr[data-subscriber=\"audit\"]";
    assert_eq!(
        text_of(&client, &format!("{audit} td.state"))
            .await
            .as_deref(),
        Some("running")
    );
    let processes = text_of(&client, &format!("{audit} td.processes"))
        .await
        .unwrap_or_default();
    assert!(
        processes.contains(&format!("(pid {})", std::process::id())),
        "{processes}"
    );
    let running_retire = client
        .find(Locator::Css(&format!("{audit} button.retire")))
        .await
        .expect("a Retire button");
    assert!(
        running_retire
            .attr("disabled")
            .await
            .expect("attribute")
            .is_some(),
        "a subscription live processes run cannot be retired from the page"
    );
    // The rest of the page loads under the prefix too.
    assert!(
        eventually(WAIT, || async {
            text_of(
                &client,
                "#boxes tr[data-box=\"inbox_events\"] td:nth-child(1)",
            )
            .await
        })
        .await
        .is_ok(),
        "the boxes load under the prefix"
    );

    client
        .find(Locator::Css(&format!("{billing} button.retire")))
        .await
        .expect("billing's Retire button")
        .click()
        .await
        .expect("click Retire");
    let confirm = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#retire-confirm"))
        .await
        .expect("the confirmation");
    let question = text_of(&client, "#retire-question")
        .await
        .unwrap_or_default();
    assert!(
        question.contains("billing") && question.contains("1 pending"),
        "{question}"
    );
    assert!(
        confirm.attr("disabled").await.expect("attribute").is_some(),
        "nothing happens before discard or keep is chosen"
    );
    client
        .find(Locator::Css("#retire-dialog input[value=\"keep\"]"))
        .await
        .expect("the keep choice")
        .click()
        .await
        .expect("choose keep");
    confirm.click().await.expect("confirm");
    eventually(WAIT, || async {
        client
            .find(Locator::Css(billing))
            .await
            .is_err()
            .then_some(())
    })
    .await
    .expect("the retired subscription leaves the panel");
    let notice = text_of(&client, "#notice").await.unwrap_or_default();
    assert!(notice.contains("Retired billing"), "{notice}");
    let kept: Vec<(MessageStatus, Option<String>)> =
        bandeja_core::store::Inspect::rows(&store, BoxKind::InboxEvents)
            .await
            .expect("rows")
            .into_iter()
            .filter(|r| r.message.subscriber.as_deref() == Some("billing"))
            .map(|r| (r.message.status, r.message.last_error))
            .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].0, MessageStatus::Failed);
    assert!(
        kept[0]
            .1
            .as_deref()
            .is_some_and(|e| e.contains("retired by an operator")),
        "{kept:?}"
    );

    client.close().await.expect("close the browser");
    let _ = stop.send(());
    serving.await.expect("server task").expect("server ran");
    running.shutdown().await;
}
