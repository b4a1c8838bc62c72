//! [`ApiError`]: every failure of an endpoint, answered as JSON `{"error": "..."}` with the
//! status code that says whose fault it is.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bandeja_core::StoreError;

/// An endpoint failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// A query parameter or path segment that cannot be used (400).
    #[error("{0}")]
    BadRequest(String),
    /// No `Authorization: Bearer` header (401).
    #[error("this endpoint needs the admin token: send `Authorization: Bearer <token>`")]
    MissingToken,
    /// A token that does not match (403).
    #[error("the admin token does not match")]
    WrongToken,
    /// No token is configured, so state-changing endpoints are disabled (403).
    #[error("admin actions are disabled: no admin token is configured on this server")]
    NoTokenConfigured,
    /// Nothing with that id (404).
    #[error("{0}")]
    NotFound(String),
    /// The rows exist but are not in a state the action applies to (409).
    #[error("{0}")]
    Conflict(String),
    /// The store failed (503 when it is unreachable or busy, 500 otherwise).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::MissingToken => StatusCode::UNAUTHORIZED,
            ApiError::WrongToken | ApiError::NoTokenConfigured => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Store(e) if e.is_transient() => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(error = %self, "admin endpoint failed");
        }
        let mut response = (
            status,
            Json(serde_json::json!({ "error": self.to_string() })),
        )
            .into_response();
        if matches!(self, ApiError::MissingToken) {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"bandeja\""),
            );
        }
        response
    }
}
