//! The shop binary's admin endpoints (bandeja-http mounted under `/admin`, or on an address
//! of their own): after an order is handled, `/admin/health/live` and `/admin/health/ready`
//! are UP and `/admin/metrics` is one valid exposition (`promtool check metrics`) with the
//! handled counters (the event's subscriber, the saga's steps) and the commit→handled
//! latency histogram of the event's subscriber; admin
//! actions and listings need the token.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use common::{place_order, wait_for, Shop, TempDir};

const WAIT: Duration = Duration::from_secs(30);
const TOKEN: &str = "shop-admin-token";

/// The value of the sample of `name` whose labels include every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

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
            let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(
                !in_ci,
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

async fn get(client: &reqwest::Client, url: &str, token: Option<&str>) -> (u16, String) {
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let reply = request.send().await.expect("GET");
    let status = reply.status().as_u16();
    (status, reply.text().await.expect("body"))
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_endpoints_show_health_and_the_metrics_of_a_handled_order() {
    let dir = TempDir::new("admin");
    let shop = Shop::start(
        &dir.sqlite_url("shop.db"),
        &[("SHOP_ADMIN_TOKEN", TOKEN)],
        &dir.path().join("shop.log"),
    );
    let client = reqwest::Client::new();
    place_order(&client, &shop, "alice", &[("MS-001", 1)]).await;

    let metrics = wait_for(
        "notification and the saga's steps to have handled the order",
        WAIT,
        || async {
            let (status, text) = get(&client, &shop.url("/admin/metrics"), None).await;
            assert_eq!(status, 200, "{text}");
            let handled = |subscriber: &str| {
                sample(
                    &text,
                    "bandeja_messages_handled_total",
                    &[&format!("subscriber=\"{subscriber}\"")],
                )
                .is_some_and(|n| n > 0.0)
            };
            let steps = ["billing-charge", "inventory-reserve", "shipping-dispatch"];
            (steps.into_iter().all(handled) && handled("notification")).then_some(text)
        },
    )
    .await;
    promtool_check(&metrics);
    assert!(
        metrics.contains("# TYPE bandeja_commit_to_handled_seconds histogram"),
        "{metrics}"
    );
    let labels = [
        "box=\"inbox_events\"",
        "type=\"shop.order.OrderConfirmed\"",
        "subscriber=\"notification\"",
    ];
    let count = sample(&metrics, "bandeja_commit_to_handled_seconds_count", &labels);
    assert!(count.is_some_and(|n| n >= 1.0), "{metrics}");
    let le = |bound: &str| {
        let le = format!("le=\"{bound}\"");
        let all = [labels[0], labels[1], labels[2], le.as_str()];
        sample(&metrics, "bandeja_commit_to_handled_seconds_bucket", &all)
    };
    assert_eq!(le("+Inf"), count, "{metrics}");
    assert!(le("0.005").is_some(), "the latency buckets: {metrics}");
    assert!(
        sample(
            &metrics,
            "bandeja_box_rows",
            &["box=\"inbox_events\"", "status=\"FAILED\""]
        ) == Some(0.0),
        "{metrics}"
    );

    let (status, live) = get(&client, &shop.url("/admin/health/live"), None).await;
    assert_eq!(status, 200, "{live}");
    let live = json(&live);
    assert_eq!(live["status"], "UP");
    let tasks = &live["components"]["workers"]["details"]["tasks"];
    assert!(
        tasks
            .as_array()
            .is_some_and(|t| t.contains(&"inbox_events worker".into())),
        "{live}"
    );
    let (status, ready) = get(&client, &shop.url("/admin/health/ready"), None).await;
    assert_eq!(status, 200, "{ready}");
    assert_eq!(json(&ready)["status"], "UP");
    let (status, health) = get(&client, &shop.url("/admin/health"), None).await;
    assert_eq!(status, 200, "{health}");
    assert_eq!(json(&health)["components"]["workers"]["status"], "UP");
    let (status, boxes) = get(&client, &shop.url("/admin/boxes"), None).await;
    assert_eq!(status, 200, "{boxes}");

    // The token rules of bandeja-http: listings and actions need it.
    let (status, _) = get(&client, &shop.url("/admin/messages"), None).await;
    assert_eq!(status, 401);
    let (status, listed) = get(&client, &shop.url("/admin/messages"), Some(TOKEN)).await;
    assert_eq!(status, 200, "{listed}");
    let retry = client
        .post(shop.url("/admin/retry"))
        .send()
        .await
        .expect("POST");
    assert_eq!(retry.status().as_u16(), 401);
    let retry = client
        .post(shop.url("/admin/retry"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("POST");
    assert_eq!(retry.status().as_u16(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_endpoints_can_have_an_address_of_their_own() {
    let dir = TempDir::new("admin-listen");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let admin = format!("127.0.0.1:{port}");
    let shop = Shop::start(
        &dir.sqlite_url("shop.db"),
        &[
            ("SHOP_ADMIN_LISTEN", admin.as_str()),
            ("SHOP_FAILED_THRESHOLD", "0"),
        ],
        &dir.path().join("shop.log"),
    );
    let client = reqwest::Client::new();
    let (status, live) = get(&client, &format!("http://{admin}/health/live"), None).await;
    assert_eq!(status, 200, "{live}");
    let (status, ready) = get(&client, &format!("http://{admin}/health/ready"), None).await;
    assert_eq!(status, 200, "{ready}");
    assert_eq!(
        json(&ready)["components"]["failed"]["details"]["threshold"],
        0
    );
    let (status, metrics) = get(&client, &format!("http://{admin}/metrics"), None).await;
    assert_eq!(status, 200);
    promtool_check(&metrics);
    // Not on the shop's own address then.
    let (status, _) = get(&client, &shop.url("/admin/health/live"), None).await;
    assert_eq!(status, 404);
}
