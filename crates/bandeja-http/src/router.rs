//! [`router`]: the endpoints over a store that implements [`Admin`].

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use bandeja_core::admin::Admin;

use crate::options::HttpOptions;
use crate::{
    actions, boxes, dashboard, discard, health, messages, metrics, sagas, subscribers, timeline,
    workers,
};

/// What every handler shares.
pub(crate) struct AppState<A> {
    pub(crate) admin: A,
    pub(crate) options: HttpOptions,
}

/// The state as handlers extract it.
pub(crate) type Shared<A> = axum::extract::State<Arc<AppState<A>>>;

/// The HTTP endpoints of bandeja over `admin` (any store implementing [`Admin`]):
///
/// | endpoint | what | token |
/// | --- | --- | --- |
/// | `GET /health/live` | `UP`, or `DOWN` (503) once a task of the runtime stopped ([`HttpOptions::liveness`]); never asks the database | never |
/// | `GET /health/ready` | `UP`, or `DOWN` (503): the database does not answer, a box is stuck, or more FAILED rows than [`HttpOptions::failed_threshold`] | never |
/// | `GET /health` | every component (actuator shape: `status`, `components`), `DOWN` (503) if one is | never |
/// | `GET /boxes[?by=tenant]` | the counters of the four boxes | never |
/// | `GET /metrics` | Prometheus text | never |
/// | `GET /messages?…`, `GET /messages/{id}` | listings, one message in full | when configured |
/// | `POST /messages/{id}/retry`, `POST /retry?…`, `POST /replay?…`, `POST /replay/outbox?…`, `POST /purge?…`, `POST /archive?…` | operator actions | always |
/// | `POST /messages/{id}/discard?reason=`, `POST /discard?…&reason=`, `POST /selection/retry`, `POST /selection/discard` | discard FAILED rows into the archive; act on chosen rows | always |
/// | `GET /timeline?minutes=60` | handled, failed and lag per minute | when configured |
/// | `GET /workers` | live processes and the lease holders of PROCESSING rows | when configured |
/// | `GET /subscribers` | the subscriptions, their live processes, pending and FAILED rows | when configured |
/// | `POST /subscribers/{name}/retire?settle=discard\|keep[&kind=events\|commands]` | end a subscription | always |
/// | `GET /sagas?type=&status=&limit=`, `GET /sagas/{id}` | the sagas (newest first, where each is), one saga with its data and history | when configured |
/// | `GET /`, `GET /dashboard` | the dashboard: counters, health, the message browser (every box and status, the archive, search, paging, a message with its attempts, retry/discard per row or selection), charts of the last hour, live workers, subscriptions, outbox replay | never (its calls use the token) |
///
/// Mount it where you like (`Router::new().nest("/bandeja", bandeja_http::router(..))`),
/// or serve it with [`bind`](crate::bind).
pub fn router<A: Admin>(admin: A, options: HttpOptions) -> Router {
    let state = Arc::new(AppState { admin, options });
    Router::new()
        .route("/", get(dashboard::page))
        .route("/dashboard", get(dashboard::page))
        .route("/health", get(health::health::<A>))
        .route("/health/live", get(health::live::<A>))
        .route("/health/ready", get(health::ready::<A>))
        .route("/boxes", get(boxes::boxes::<A>))
        .route("/metrics", get(metrics::render::<A>))
        .route("/messages", get(messages::list::<A>))
        .route("/messages/{id}", get(messages::show::<A>))
        .route("/messages/{id}/retry", post(actions::retry_one::<A>))
        .route("/messages/{id}/discard", post(discard::discard_one::<A>))
        .route("/discard", post(discard::discard::<A>))
        .route("/selection/retry", post(discard::retry_selection::<A>))
        .route("/selection/discard", post(discard::discard_selection::<A>))
        .route("/timeline", get(timeline::timeline::<A>))
        .route("/workers", get(workers::list::<A>))
        .route("/retry", post(actions::retry::<A>))
        .route("/replay", post(actions::replay::<A>))
        .route("/replay/outbox", post(actions::replay_outbox::<A>))
        .route("/purge", post(actions::purge::<A>))
        .route("/archive", post(actions::archive::<A>))
        .route("/subscribers", get(subscribers::list::<A>))
        .route("/subscribers/{name}/retire", post(subscribers::retire::<A>))
        .route("/sagas", get(sagas::list::<A>))
        .route("/sagas/{id}", get(sagas::show::<A>))
        .with_state(state)
}
