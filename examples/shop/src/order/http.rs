//! `POST /orders` and `GET /orders/{id}`.

use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::command::PlaceOrder;
use super::model::{Order, OrderLine};
use super::progress::Progress;
use super::service::{self, FindOrderError, PlaceOrderError};
use crate::app::AppState;
use crate::error::ApiError;
use crate::money::Money;
use crate::ShopDb;

/// An order as the API shows it.
#[derive(Debug, Serialize)]
pub struct OrderView<'a> {
    /// The order's id.
    pub id: i64,
    /// Who ordered.
    pub customer: &'a str,
    /// Where it stands: `status` (its saga's: `PROCESSING`, `COMPLETED`, `COMPENSATED`,
    /// …), `step`, `reason`, `saga_id`.
    #[serde(flatten)]
    pub progress: &'a Progress,
    /// The lines.
    pub lines: &'a [OrderLine],
    /// The total.
    pub total: Money,
    /// When it was confirmed.
    pub confirmed_at: DateTime<Utc>,
}

impl<'a> OrderView<'a> {
    fn of(id: i64, order: &'a Order, progress: &'a Progress) -> Self {
        OrderView {
            id,
            customer: order.customer(),
            progress,
            lines: order.lines(),
            total: order.total(),
            confirmed_at: order.confirmed_at(),
        }
    }
}

impl From<PlaceOrderError> for ApiError {
    fn from(error: PlaceOrderError) -> Self {
        match error {
            PlaceOrderError::Rejected(rule) => ApiError::unprocessable(rule.to_string()),
            PlaceOrderError::Database(e) => ApiError::internal(&e),
            PlaceOrderError::Outbox(e) => ApiError::internal(&e),
        }
    }
}

impl From<FindOrderError> for ApiError {
    fn from(error: FindOrderError) -> Self {
        ApiError::internal(&error)
    }
}

/// Places an order: 201 with the order and its `Location`, or a 4xx JSON error (nothing
/// written).
pub async fn create<D: ShopDb>(
    State(state): State<AppState<D>>,
    body: Result<Json<PlaceOrder>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(request) = body?;
    let placed = service::place_order(&state.db, &state.bandeja, &state.saga, request).await?;
    let id = placed
        .order
        .id()
        .ok_or_else(|| ApiError::internal(&"the stored order has no id"))?;
    let view = OrderView::of(id, &placed.order, &placed.progress);
    let mut response = (StatusCode::CREATED, Json(view)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/orders/{id}")) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// The order with this id and where it stands (its saga's status and step), or 404.
pub async fn get<D: ShopDb>(
    State(state): State<AppState<D>>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Response, ApiError> {
    let Ok(Path(id)) = id else {
        return Err(ApiError::not_found("order ids are numbers"));
    };
    match service::find_order(&state.db, id).await? {
        Some((order, progress)) => Ok(Json(OrderView::of(id, &order, &progress)).into_response()),
        None => Err(ApiError::not_found(format!("order {id} not found"))),
    }
}
