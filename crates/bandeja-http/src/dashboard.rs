//! `GET /` and `GET /dashboard`: one self-contained page (inline CSS and JavaScript, no
//! CDN) showing the four boxes' counters (rows taken over included) and the FAILED messages
//! with their retries, lease takeovers and last error, with buttons to retry one or all; a
//! control to replay outbox messages by box, type and time window (counted first, then
//! confirmed); and the subscriptions with their live processes, pending and FAILED rows,
//! waiting and unattended ones flagged, each with a Retire button that asks discard or keep
//! first. The page calls the endpoints relative to where it is served, so it works wherever
//! the router is mounted (`/`, `/bandeja/`, `/bandeja/dashboard`).
//!
//! The page carries no secret. The operator types the admin token into it (or opens the
//! URL [`Server::dashboard_url`](crate::Server::dashboard_url) prints, whose `#token=`
//! fragment never reaches the server); it is kept in the tab's `sessionStorage` and sent
//! as `Authorization: Bearer`, a header no other site's page can make a browser send here
//! without a CORS preflight this server never grants. A per-response nonce in a strict
//! Content-Security-Policy lets only the page's own script and style run; data is
//! inserted as text, never as HTML.

use axum::http::header;
use axum::response::{IntoResponse, Response};

const PAGE: &str = include_str!("dashboard.html");

/// `GET /`, `GET /dashboard`.
pub(crate) async fn page() -> Response {
    let nonce = format!("{:032x}", rand::random::<u128>());
    let csp = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    );
    let html = PAGE.replace("{{NONCE}}", &nonce);
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8".to_owned()),
            (header::CONTENT_SECURITY_POLICY, csp),
            (header::CACHE_CONTROL, "no-store".to_owned()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            (header::REFERRER_POLICY, "no-referrer".to_owned()),
            (header::X_FRAME_OPTIONS, "DENY".to_owned()),
        ],
        html,
    )
        .into_response()
}
