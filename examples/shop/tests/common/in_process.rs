//! The shop inside the test process: a fresh SQLite file, bandeja's workers running on the
//! test's runtime, and the HTTP router called with `oneshot` (no socket, no child process).

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use bandeja::sqlite::SqliteStore;
use bandeja::{Running, Store};
use serde_json::Value;
use sqlx::SqlitePool;
use tower::ServiceExt;

use shop::app::{self, AppState};
use shop::messaging::{self, Handlers, Service};

use super::{order_body, TempDir};

/// The whole shop (every module, the in-process transport) on its own SQLite file. Dropping
/// it stops the workers and removes the file.
pub(crate) struct App {
    _running: Running,
    router: Router,
    store: SqliteStore,
    _dir: TempDir,
}

impl App {
    /// Migrates a fresh database, starts the workers with the shop's bandeja settings (as
    /// the binary has them without a configuration file or `BANDEJA_*` variables) and
    /// builds the router. `notification_delay` is `SHOP_NOTIFICATION_DELAY`.
    pub(crate) async fn start(name: &str, notification_delay: Duration) -> App {
        let dir = TempDir::new(name);
        let store = SqliteStore::connect(&dir.sqlite_url("shop.db"))
            .await
            .expect("open the SQLite file");
        store.migrate().await.expect("migrate bandeja's boxes");
        shop::db::migrate(&store)
            .await
            .expect("migrate the shop's tables");
        let config = shop::config::shop_defaults(notification_delay, Duration::ZERO);
        let saga = shop::order::order_saga().expect("the order saga");
        let handlers = Handlers {
            notification_delay,
            ..Handlers::default()
        };
        let bandeja =
            messaging::bandeja(store.clone(), config, &handlers, Service::All, None, &saga)
                .expect("wire the subscribers");
        let running = bandeja.start().await.expect("start the workers");
        let router = app::router(AppState::new(store.clone(), bandeja, saga), Service::All);
        App {
            _running: running,
            router,
            store,
            _dir: dir,
        }
    }

    /// bandeja's store on the shop's database (to emit as another producer would).
    pub(crate) fn store(&self) -> &SqliteStore {
        &self.store
    }

    /// The shop's database, to look at its tables.
    pub(crate) fn pool(&self) -> &SqlitePool {
        self.store.pool()
    }

    /// Sends `request` through the router: the status and the JSON body (panics if the
    /// body is not JSON).
    pub(crate) async fn send(&self, request: Request<Body>) -> (StatusCode, Value) {
        let what = format!("{} {}", request.method(), request.uri());
        let Ok(response) = self.router.clone().oneshot(request).await;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap_or_else(|e| panic!("{what}: reading the body: {e}"));
        let body = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            let text = String::from_utf8_lossy(&bytes);
            panic!("{what}: the body is not JSON ({e}): {text}")
        });
        (status, body)
    }

    /// `GET path`.
    pub(crate) async fn get(&self, path: &str) -> (StatusCode, Value) {
        let request = Request::get(path)
            .body(Body::empty())
            .expect("a GET request");
        self.send(request).await
    }

    /// `POST path` with `body` as `content_type`.
    pub(crate) async fn post(
        &self,
        path: &str,
        content_type: &str,
        body: impl Into<Body>,
    ) -> (StatusCode, Value) {
        let request = Request::post(path)
            .header(header::CONTENT_TYPE, content_type)
            .body(body.into())
            .expect("a POST request");
        self.send(request).await
    }

    /// `POST /orders` with the JSON `body`.
    pub(crate) async fn post_order(&self, body: &Value) -> (StatusCode, Value) {
        self.post("/orders", "application/json", body.to_string())
            .await
    }

    /// Places an order and checks the 201; returns the order (JSON).
    pub(crate) async fn place_order(&self, customer: &str, items: &[(&str, i64)]) -> Value {
        let (status, order) = self.post_order(&order_body(customer, items)).await;
        assert_eq!(status, StatusCode::CREATED, "POST /orders: {order}");
        order
    }

    /// Waits until `GET /orders/{id}` shows `status` (for at most `timeout`); the order.
    pub(crate) async fn wait_for_status(&self, id: i64, status: &str, timeout: Duration) -> Value {
        let path = format!("/orders/{id}");
        super::wait_for(&format!("order {id} {status}"), timeout, || async {
            let (code, order) = self.get(&path).await;
            assert_eq!(code, StatusCode::OK, "GET {path}: {order}");
            (order["status"] == status).then_some(order)
        })
        .await
    }

    /// `GET /stock/{sku}` → available units.
    pub(crate) async fn stock(&self, sku: &str) -> i64 {
        let (status, body) = self.get(&format!("/stock/{sku}")).await;
        assert_eq!(status, StatusCode::OK, "GET /stock/{sku}: {body}");
        body["available"].as_i64().expect("available units")
    }
}
