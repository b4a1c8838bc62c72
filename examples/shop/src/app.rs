//! The HTTP API: routes and shared state.
//!
//! | route | answer |
//! | --- | --- |
//! | `POST /orders` | 201 with the order, or a 4xx `{"error": ...}` |
//! | `GET /orders/{id}` | the order, or 404 |
//! | `GET /stock/{sku}` | `{"sku": ..., "available": ...}`, or 404 |
//! | `GET /products` | the catalog |
//!
//! A process running one service ([`Service`]) serves that service's routes only.

use axum::routing::{get, post};
use axum::Router;

use bandeja::Outbox;

use crate::error::ApiError;
use crate::messaging::Service;
use crate::{catalog, inventory, order, ShopDb};

/// What the request handlers share: the database and the outbox handle.
#[derive(Clone)]
pub struct AppState<D: ShopDb> {
    /// The database (also bandeja's store).
    pub db: D,
    /// Writes events through the caller's transaction, with the runtime's rules.
    pub outbox: Outbox<D>,
}

impl<D: ShopDb> AppState<D> {
    /// The state on `db`, emitting through `outbox` (the runtime's, `bandeja.outbox()`).
    pub fn new(db: D, outbox: Outbox<D>) -> Self {
        AppState { db, outbox }
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
