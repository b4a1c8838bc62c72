//! `GET /products`: the catalog.

use axum::extract::State;
use axum::Json;

use super::{repository, Product};
use crate::app::AppState;
use crate::error::ApiError;
use crate::ShopDb;

/// Lists the products.
pub async fn list<D: ShopDb>(
    State(state): State<AppState<D>>,
) -> Result<Json<Vec<Product>>, ApiError> {
    Ok(Json(repository::products(&state.db).await?))
}
