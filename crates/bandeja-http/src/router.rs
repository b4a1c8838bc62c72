//! [`router`]: the endpoints over a store that implements [`Admin`].

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use bandeja_core::admin::Admin;

use crate::options::HttpOptions;
use crate::{actions, boxes, dashboard, messages, metrics, subscribers};

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
/// | `GET /health` | `UP`, or `DOWN` (503) with a reason per box | never |
/// | `GET /boxes[?by=tenant]` | the counters of the four boxes | never |
/// | `GET /metrics` | Prometheus text | never |
/// | `GET /messages?…`, `GET /messages/{id}` | listings, one message in full | when configured |
/// | `POST /messages/{id}/retry`, `POST /retry?…`, `POST /replay?…`, `POST /replay/outbox?…`, `POST /purge?…`, `POST /archive?…` | operator actions | always |
/// | `GET /subscribers` | the subscriptions, their live processes, pending and FAILED rows | when configured |
/// | `POST /subscribers/{name}/retire?settle=discard\|keep[&kind=events\|commands]` | end a subscription | always |
/// | `GET /`, `GET /dashboard` | the dashboard page | never (its calls use the token) |
///
/// Mount it where you like (`Router::new().nest("/bandeja", bandeja_http::router(..))`),
/// or serve it with [`bind`](crate::bind).
pub fn router<A: Admin>(admin: A, options: HttpOptions) -> Router {
    let state = Arc::new(AppState { admin, options });
    Router::new()
        .route("/", get(dashboard::page))
        .route("/dashboard", get(dashboard::page))
        .route("/health", get(boxes::health::<A>))
        .route("/boxes", get(boxes::boxes::<A>))
        .route("/metrics", get(metrics::render::<A>))
        .route("/messages", get(messages::list::<A>))
        .route("/messages/{id}", get(messages::show::<A>))
        .route("/messages/{id}/retry", post(actions::retry_one::<A>))
        .route("/retry", post(actions::retry::<A>))
        .route("/replay", post(actions::replay::<A>))
        .route("/replay/outbox", post(actions::replay_outbox::<A>))
        .route("/purge", post(actions::purge::<A>))
        .route("/archive", post(actions::archive::<A>))
        .route("/subscribers", get(subscribers::list::<A>))
        .route("/subscribers/{name}/retire", post(subscribers::retire::<A>))
        .with_state(state)
}
