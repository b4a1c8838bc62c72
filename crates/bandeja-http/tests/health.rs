//! The three health endpoints over real stores (a SQLite file, a PostgreSQL schema or
//! database per test) and real runtimes: liveness follows the runtime's tasks and nothing
//! else (UP with a stuck backlog, UP with the database gone, DOWN once the runtime stopped);
//! readiness follows the database, stuck boxes and, when set, the FAILED threshold;
//! `/health` has the actuator shape.

mod common;

use std::str::FromStr;
use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;
use bandeja_conformance::fixtures::fast_config;
use bandeja_core::admin::Admin;
use bandeja_core::store::Inspect;
use bandeja_core::testing::eventually;
use bandeja_core::{Bandeja, Enabled, Running, Store};
use bandeja_http::{router, HttpOptions};
use bandeja_postgres::PgStore;
use common::{
    call, order, pg_store, sqlite_store, start_with_a_failed_order, Flaky, OrderPlaced, Reply, WAIT,
};
use serde_json::Value;

const TOKEN: &str = "health-token";

/// A runtime with `billing` subscribed and the events outbox worker off: what is emitted
/// stays PENDING in `outbox_events` while the runtime's other tasks run.
fn runtime_without_relay<S: Store>(store: S) -> Bandeja<S> {
    let mut config = fast_config();
    config.events_outbox.enabled = Enabled::Off;
    Bandeja::builder(store)
        .config(config)
        .on_event::<OrderPlaced, _>("billing", Flaky::default())
        .build()
        .expect("valid runtime")
}

fn status_of(reply: &Reply) -> (StatusCode, Value) {
    (reply.status, reply.json()["status"].clone())
}

/// Starts `bandeja` and routes `store` with `options` and the runtime's liveness probe.
async fn start_and_route<S: Admin + Inspect>(
    bandeja: &Bandeja<S>,
    store: &S,
    options: HttpOptions,
) -> (Running, Router) {
    let running = bandeja.start().await.expect("start");
    let app = router(store.clone(), options.liveness(running.liveness()));
    (running, app)
}

/// Asserts that `/health/live` answers 200 UP; returns the reply.
async fn assert_live_up(app: &Router) -> Reply {
    let live = call(app, "GET", "/health/live", None).await;
    assert_eq!(
        status_of(&live),
        (StatusCode::OK, "UP".into()),
        "{}",
        live.body
    );
    live
}

/// Asserts that `GET path` answers 503 Service Unavailable; returns its JSON body.
async fn assert_unavailable(app: &Router, path: &str) -> Value {
    let reply = call(app, "GET", path, None).await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.body
    );
    reply.json()
}

/// One `#[tokio::test]` per store for each scenario (a generic async fn over the store):
/// `<scenario>::sqlite` on a SQLite file, `<scenario>::postgres` in a PostgreSQL schema.
macro_rules! on_each_store {
    ($($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let (store, _file) = super::sqlite_store().await;
                super::$scenario(store).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let Some((store, _schema)) = super::pg_store().await else {
                    return;
                };
                super::$scenario(store).await;
            }
        }
    )+};
}

on_each_store!(
    live_stays_up_with_stuck_rows_while_ready_goes_down,
    a_failed_threshold_flips_ready,
    a_stopped_runtime_is_not_live,
    health_has_the_actuator_shape,
);

async fn live_stays_up_with_stuck_rows_while_ready_goes_down<S: Admin + Inspect>(store: S) {
    let bandeja = runtime_without_relay(store.clone());
    let options = HttpOptions::new().stuck_threshold(Duration::from_millis(50));
    let (running, app) = start_and_route(&bandeja, &store, options).await;
    for n in 1..=3 {
        bandeja.emit(&order(n)).await.expect("emit");
    }
    let ready = eventually(WAIT, || async {
        let reply = call(&app, "GET", "/health/ready", None).await;
        (reply.status == StatusCode::SERVICE_UNAVAILABLE).then_some(reply)
    })
    .await
    .expect("ready goes DOWN once the backlog is older than the stuck threshold");
    let body = ready.json();
    assert_eq!(body["status"], "DOWN", "{body}");
    assert_eq!(body["components"]["db"]["status"], "UP", "{body}");
    let boxes = &body["components"]["boxes"];
    assert_eq!(boxes["status"], "DOWN", "{body}");
    let outbox = &boxes["details"]["outbox_events"];
    assert_eq!(outbox["pending"], 3, "{body}");
    assert!(outbox["stuck"].as_u64().is_some_and(|n| n >= 1), "{body}");
    assert_eq!(
        boxes["details"]["outbox_events"]["status"], "DOWN",
        "{body}"
    );
    assert_eq!(body["components"]["failed"]["status"], "UP", "{body}");

    let live = assert_live_up(&app).await;
    let workers = &live.json()["components"]["workers"];
    let tasks = workers["details"]["tasks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(tasks.contains(&"inbox_events worker".into()), "{workers}");
    assert!(!tasks.contains(&"outbox_events worker".into()), "{workers}");
    assert_eq!(workers["details"]["stopped"], Value::Array(Vec::new()));
    running.shutdown().await;
}

/// With the database gone, ready (and `/health`) is DOWN naming it, live stays UP.
async fn assert_ready_down_and_live_up(app: &Router) {
    let body = assert_unavailable(app, "/health/ready").await;
    let db = &body["components"]["db"];
    assert_eq!(db["status"], "DOWN", "{body}");
    let reason = db["details"]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("database unreachable"), "{body}");
    assert_eq!(body["components"]["boxes"]["status"], "UNKNOWN", "{body}");
    let health = call(app, "GET", "/health", None).await;
    assert_eq!(status_of(&health).0, StatusCode::SERVICE_UNAVAILABLE);

    let started = std::time::Instant::now();
    assert_live_up(app).await;
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "live waited for the database"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_ready_is_down_and_live_up_when_the_database_is_closed() {
    let (store, _file) = sqlite_store().await;
    let options = HttpOptions::new().health_timeout(Duration::from_secs(1));
    let (running, app) =
        start_and_route(&runtime_without_relay(store.clone()), &store, options).await;
    assert_eq!(
        status_of(&call(&app, "GET", "/health/ready", None).await).0,
        StatusCode::OK
    );
    store.pool().close().await;
    assert_ready_down_and_live_up(&app).await;
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_ready_is_down_and_live_up_when_the_database_is_dropped() {
    // PostgreSQL must be there (CI fails otherwise); the test makes a database of its own.
    let Some((admin, _schema)) = pg_store().await else {
        return;
    };
    let name = format!("bandeja_http_health_{:016x}", rand::random::<u64>());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(admin.pool())
        .await
        .expect("create a database");
    let options =
        sqlx::postgres::PgConnectOptions::from_str(&bandeja_postgres::testing::database_url())
            .expect("the tests' database URL")
            .database(&name);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .acquire_timeout(Duration::from_secs(1))
        .connect_with(options)
        .await
        .expect("connect to the new database");
    let store = PgStore::from_pool(pool, None).expect("store");
    store.migrate().await.expect("migrate");
    let options = HttpOptions::new().health_timeout(Duration::from_secs(2));
    let (running, app) =
        start_and_route(&runtime_without_relay(store.clone()), &store, options).await;
    let before = call(&app, "GET", "/health/ready", None).await;
    sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .execute(admin.pool())
        .await
        .expect("drop the database");
    assert_eq!(before.status, StatusCode::OK, "{}", before.body);
    assert_ready_down_and_live_up(&app).await;
    running.shutdown_within(Duration::from_secs(5)).await;
}

async fn a_failed_threshold_flips_ready<S: Admin + Inspect>(store: S) {
    let (running, event) = start_with_a_failed_order(&store, 7).await;
    let default = router(store.clone(), HttpOptions::new());
    let strict = router(
        store.clone(),
        HttpOptions::new().token(TOKEN).failed_threshold(0),
    );
    let lenient = router(store.clone(), HttpOptions::new().failed_threshold(1));

    let plain = call(&default, "GET", "/health/ready", None).await;
    assert_eq!(
        status_of(&plain),
        (StatusCode::OK, "UP".into()),
        "{}",
        plain.body
    );
    let failed = &plain.json()["components"]["failed"];
    assert_eq!(failed["details"]["failed"], 1, "{failed}");
    assert_eq!(failed["details"]["threshold"], Value::Null, "{failed}");
    let ok = call(&lenient, "GET", "/health/ready", None).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);

    let body = assert_unavailable(&strict, "/health/ready").await;
    let failed = &body["components"]["failed"];
    assert_eq!(failed["status"], "DOWN", "{body}");
    assert_eq!(failed["details"]["by_box"]["inbox_events"], 1, "{body}");
    let reason = failed["details"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("more than the FAILED threshold 0"),
        "{reason}"
    );
    assert_eq!(
        status_of(&call(&strict, "GET", "/health", None).await).0,
        StatusCode::SERVICE_UNAVAILABLE
    );

    // Retried by the operator, handled this time: ready again.
    let retried = call(
        &strict,
        "POST",
        &format!("/messages/{}/retry", event.id),
        Some(TOKEN),
    )
    .await;
    assert_eq!(retried.status, StatusCode::OK, "{}", retried.body);
    eventually(WAIT, || async {
        let reply = call(&strict, "GET", "/health/ready", None).await;
        (reply.status == StatusCode::OK).then_some(())
    })
    .await
    .expect("ready is UP again once the FAILED row is retried and handled");
    running.shutdown().await;
}

async fn a_stopped_runtime_is_not_live<S: Admin + Inspect>(store: S) {
    let bandeja = common::runtime(store.clone(), Flaky::default());
    let (running, app) = start_and_route(&bandeja, &store, HttpOptions::new()).await;
    assert_live_up(&app).await;

    running.shutdown().await;
    let body = assert_unavailable(&app, "/health/live").await;
    let workers = &body["components"]["workers"];
    assert_eq!(workers["status"], "DOWN", "{body}");
    assert_eq!(workers["details"]["stopping"], true, "{body}");
    let stopped = workers["details"]["stopped"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        stopped.contains(&serde_json::json!({"task": "inbox_events worker", "ended": "stopped"})),
        "{body}"
    );
    assert_eq!(
        stopped.len(),
        workers["details"]["tasks"].as_array().map_or(0, Vec::len)
    );
    let health = assert_unavailable(&app, "/health").await;
    assert_eq!(health["components"]["workers"]["status"], "DOWN");
}

async fn health_has_the_actuator_shape<S: Admin + Inspect>(store: S) {
    let bandeja = common::runtime(store.clone(), Flaky::default());
    let (running, app) = start_and_route(&bandeja, &store, HttpOptions::new()).await;
    let reply = call(&app, "GET", "/health", None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let body = reply.json();
    assert_eq!(body["status"], "UP", "{body}");
    let components = body["components"].as_object().cloned().unwrap_or_default();
    let names: Vec<&str> = components.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["boxes", "db", "failed", "subscriptions", "workers"],
        "{body}"
    );
    for (name, component) in &components {
        assert_eq!(component["status"], "UP", "{name}: {body}");
        assert!(component["details"].is_object(), "{name}: {body}");
    }
    let outbox = &components["boxes"]["details"]["outbox_events"];
    for counter in ["pending", "processing", "stuck", "failed", "taken_over"] {
        assert!(outbox[counter].is_u64(), "{counter}: {outbox}");
    }
    assert!(outbox.get("oldest_pending_at").is_some(), "{outbox}");
    assert_eq!(components["boxes"]["details"]["stuck_threshold"], "PT5M");
    assert!(
        components["db"]["details"]["answered_in_ms"].is_u64(),
        "{body}"
    );
    assert_eq!(components["workers"]["details"]["probe"], true);
    // The earlier fields stay, for the clients that read them.
    assert_eq!(body["database"]["status"], "UP");
    assert_eq!(body["boxes"]["inbox_events"]["status"], "UP");
    assert_eq!(body["subscriptions"]["status"], "UP");

    let ready = call(&app, "GET", "/health/ready", None).await.json();
    let names: Vec<&str> = ready["components"]
        .as_object()
        .map(|c| c.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(names, ["boxes", "db", "failed"], "{ready}");
    assert!(ready.get("database").is_none(), "{ready}");
    running.shutdown().await;

    // Without a probe (a process that runs no workers, as `bandeja serve`): live while it
    // answers.
    let standalone = router(store, HttpOptions::new());
    let live = assert_live_up(&standalone).await;
    assert_eq!(
        live.json()["components"]["workers"]["details"]["probe"],
        false
    );
}
