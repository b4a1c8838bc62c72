//! The HTTP API: routes and shared state.
//!
//! | route | answer |
//! | --- | --- |
//! | `POST /orders` | 201 with the order (its saga just started), or a 4xx `{"error": ...}` |
//! | `GET /orders/{id}` | the order and where its saga stands (`status`, `step`), or 404 |
//! | `GET /stock/{sku}` | `{"sku": ..., "available": ...}`, or 404 |
//! | `GET /products` | the catalog |
//!
//! A process running one service ([`Service`]) serves that service's routes only.

use axum::routing::{get, post};
use axum::Router;

use bandeja::sagas::Saga;
use bandeja::Bandeja;

use crate::error::ApiError;
use crate::messaging::Service;
use crate::order::OrderSaga;
use crate::{catalog, inventory, order, ShopDb};

/// What the request handlers share: the database, the messaging runtime and the order
/// saga's definition.
#[derive(Clone)]
pub struct AppState<D: ShopDb> {
    /// The database (also bandeja's store).
    pub db: D,
    /// The runtime: its outbox writes events through the caller's transaction, and it
    /// starts the order saga (registered on it when the process runs the order module).
    pub bandeja: Bandeja<D>,
    /// The order saga.
    pub saga: Saga<OrderSaga>,
}

impl<D: ShopDb> AppState<D> {
    /// The state on `db` with the runtime `bandeja` and the order saga `saga`.
    pub fn new(db: D, bandeja: Bandeja<D>, saga: Saga<OrderSaga>) -> Self {
        AppState { db, bandeja, saga }
    }
}

/// The routes of the modules `service` runs.
pub fn router<D: ShopDb>(state: AppState<D>, service: Service) -> Router {
    let mut router = Router::new();
    if service.runs(Service::Order) {
        router = router
            .route("/orders", post(order::http::create::<D>))
            .route("/orders/{id}", get(order::http::get::<D>))
            .route("/products", get(catalog::http::list::<D>));
    }
    if service.runs(Service::Inventory) {
        router = router.route("/stock/{sku}", get(inventory::http::stock::<D>));
    }
    router
        .fallback(|| async { ApiError::not_found("no such route") })
        .with_state(state)
}
