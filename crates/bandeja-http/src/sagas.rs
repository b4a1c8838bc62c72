//! `GET /sagas?type=&status=&limit=` (the sagas, newest first, with where each is) and
//! `GET /sagas/{id}` (one saga with its data and history): what `bandeja sagas list` and
//! `show` print, and the dashboard's Sagas panel. The token when one is configured (a
//! saga's data is the application's).

use axum::extract::Path;
use axum::http::HeaderMap;
use axum::Json;
use bandeja_core::admin::Admin;
use bandeja_core::saga::{SagaFilter, SagaId, SagaState, SagaStatus};
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::auth;
use crate::error::ApiError;
use crate::filter::Params;
use crate::messages::{pairs, RawQuery};
use crate::router::Shared;

/// One saga in a listing.
#[derive(Debug, Serialize)]
pub(crate) struct SagaLine {
    id: SagaId,
    saga_type: String,
    status: SagaStatus,
    /// The step awaited or being compensated.
    step: String,
    phase: bandeja_core::saga::SagaPhase,
    attempt: u32,
    deadline: Option<DateTime<Utc>>,
    reason: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl SagaLine {
    fn of(state: &SagaState) -> SagaLine {
        let step = state.current_step().to_owned();
        SagaLine {
            id: state.id,
            saga_type: state.saga_type.clone(),
            status: state.status,
            step,
            phase: state.phase,
            attempt: state.attempt,
            deadline: state.deadline,
            reason: state.reason.clone(),
            created_at: state.created_at,
            updated_at: state.updated_at,
        }
    }
}

/// `GET /sagas`.
#[derive(Debug, Serialize)]
pub(crate) struct SagaListing {
    sagas: Vec<SagaLine>,
}

pub(crate) async fn list<A: Admin>(
    state: Shared<A>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Json<SagaListing>, ApiError> {
    auth::allow_read(&state.options, &headers)?;
    let params = Params::new(pairs(query)?, &[&["type", "status", "limit"]])?;
    let status = params
        .get("status")
        .map(str::parse::<SagaStatus>)
        .transpose()
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let limit = params
        .get("limit")
        .map(|l| {
            l.parse::<usize>()
                .map_err(|_| ApiError::BadRequest(format!("limit `{l}` is not a number")))
        })
        .transpose()?
        .unwrap_or(50);
    let filter = SagaFilter {
        saga_type: params.get("type").map(str::to_owned),
        status,
        limit,
    };
    let sagas = state.admin.list_sagas(&filter).await?;
    Ok(Json(SagaListing {
        sagas: sagas.iter().map(SagaLine::of).collect(),
    }))
}

/// `GET /sagas/{id}`: 404 for an id no saga has.
pub(crate) async fn show<A: Admin>(
    state: Shared<A>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<SagaState>, ApiError> {
    auth::allow_read(&state.options, &headers)?;
    let id: SagaId = id
        .parse()
        .map_err(|_| ApiError::BadRequest(format!("`{id}` is not a saga id (a UUID)")))?;
    match state.admin.saga(id).await? {
        Some(saga) => Ok(Json(saga)),
        None => Err(ApiError::NotFound(format!("no saga {id}"))),
    }
}
