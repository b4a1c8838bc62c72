//! `GET /stock/{sku}`: units available.

use axum::extract::{Path, State};
use axum::Json;
use serde::Serialize;

use super::repository;
use crate::app::AppState;
use crate::error::ApiError;
use crate::ShopDb;

/// The stock of one product.
#[derive(Debug, Serialize)]
pub struct StockView {
    /// The product.
    pub sku: String,
    /// Units available.
    pub available: i64,
}

/// The stock of `sku`, or 404 if the inventory does not track it.
pub async fn stock<D: ShopDb>(
    State(state): State<AppState<D>>,
    Path(sku): Path<String>,
) -> Result<Json<StockView>, ApiError> {
    match repository::stock_of(&state.db, &sku).await? {
        Some(available) => Ok(Json(StockView { sku, available })),
        None => Err(ApiError::not_found(format!("unknown product `{sku}`"))),
    }
}
