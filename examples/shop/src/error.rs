//! API errors: every failure answers with a status and a JSON body `{"error": "..."}`,
//! including axum's own rejections (malformed JSON, missing fields, wrong content type).

use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// An error answered to an API client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for the client.
    pub message: String,
}

impl ApiError {
    /// 404 Not Found.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }

    /// 422 Unprocessable Entity: well-formed, but breaks a rule.
    pub fn unprocessable(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            message: message.into(),
        }
    }

    /// 500: logs the cause and answers a generic message (internals stay in the log).
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "request failed");
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: "internal error, see the server log".to_owned(),
        }
    }
}

impl From<JsonRejection> for ApiError {
    /// Malformed JSON → 400, valid JSON of the wrong shape (missing field, wrong type) →
    /// 422, wrong content type → 415; the message says which.
    fn from(rejection: JsonRejection) -> Self {
        ApiError {
            status: rejection.status(),
            message: rejection.body_text(),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        ApiError::internal(&error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.message }))).into_response()
    }
}
