//! Where an order stands: its saga's state, as `GET /orders/{id}` shows it.

use bandeja::saga::{SagaId, SagaState, SagaStatus};
use serde::Serialize;

use super::model::OrderStatus;

/// The order's progress through its saga.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// `PROCESSING`, `COMPENSATING`, `COMPLETED`, `COMPENSATED`, `FAILED` (or `CONFIRMED`
    /// for an order stored before the shop had sagas).
    pub status: OrderStatus,
    /// The step the saga is at, or ended on (`charge`, `reserve`, `ship`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Why it compensated or failed (a refused step's reason, a timeout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The saga's id: the correlation id of its messages
    /// (`bandeja messages list --correlation ID`, `bandeja sagas show ID`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saga_id: Option<String>,
}

impl Progress {
    /// Saga `saga_id` just started: at its first step.
    pub fn started(saga_id: SagaId, step: &str) -> Progress {
        Progress {
            status: OrderStatus::Processing,
            step: Some(step.to_owned()),
            reason: None,
            saga_id: Some(saga_id.to_string()),
        }
    }

    /// An order without a saga (stored before the shop had sagas).
    pub fn confirmed() -> Progress {
        Progress {
            status: OrderStatus::Confirmed,
            step: None,
            reason: None,
            saga_id: None,
        }
    }

    /// The progress a saga's state shows.
    pub fn of(state: &SagaState) -> Progress {
        let status = match state.status {
            SagaStatus::Running => OrderStatus::Processing,
            SagaStatus::Compensating => OrderStatus::Compensating,
            SagaStatus::Completed => OrderStatus::Completed,
            SagaStatus::Compensated => OrderStatus::Compensated,
            SagaStatus::Failed => OrderStatus::Failed,
        };
        let step = Some(state.current_step().to_owned()).filter(|s| !s.is_empty());
        Progress {
            status,
            step,
            reason: state.reason.clone(),
            saga_id: Some(state.id.to_string()),
        }
    }
}
