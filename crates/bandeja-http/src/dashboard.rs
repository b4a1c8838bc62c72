//! `GET /` and `GET /dashboard`: one self-contained page (inline CSS, JavaScript and SVG, no
//! CDN, no library), a message browser at the level of Sidekiq's, Hangfire's or Oban Web's:
//!
//! - health (the actuator `status`, the components that are DOWN named) and the four
//!   boxes' counters (rows taken over included), each count a link to those rows;
//! - charts of the last hour from `GET /timeline`: messages handled and failed attempts per
//!   minute (bars), lag from emission to handling (max and average, lines), for every box
//!   or one;
//! - live workers from `GET /workers`: per box the live processes and the leases they hold
//!   (PROCESSING rows and their expiry), and every process with its heartbeat;
//! - the browser: a tab per status (PENDING, PROCESSING with holder and lease expiry,
//!   FAILED, COMPLETED, every status) and the archive, a box selector and a search by id,
//!   type, subscriber, tenant, correlation id and time window; pages with the total
//!   ("1–50 of 138") walked with Older / Newer through the listing's cursors; Retry and
//!   Discard per row (that row only: its box and subscriber) and for a selection, Retry
//!   all matching; Discard asks for a reason in an inline form;
//! - a message view (`GET /messages/{id}`): every row (the outbox row, one per subscriber,
//!   archived ones with who discarded them and why), the headers, the payload as pretty
//!   JSON and every attempt with its outcome, error, time and worker;
//! - the subscriptions with their live processes, pending and FAILED rows, waiting and
//!   unattended ones flagged, each with a Retire button that asks discard or keep first;
//!   a control to replay outbox messages by box, type and time window (counted first,
//!   then confirmed); and the state of what was retried from the page.
//!
//! Times show in UTC ISO 8601 with their age (`2026-12-01T21:05:03Z · 3 min ago`). The
//! page refreshes every two seconds (a Live switch pauses it) without losing the filters,
//! the selection or the open message; the view (never the token) lives in the URL's
//! fragment, so a view can be linked. It fits a 420 px wide screen: tables turn into
//! stacked cards.
//!
//! The page calls the endpoints relative to where it is served: the server tells it which
//! of its two routes answered (`/` or `/dashboard`, as the router saw the path, after any
//! `nest` prefix or proxy rewrite), and the page takes that route off its own address. So
//! it works wherever the router is mounted (`/`, `/dashboard`, `nest("/bandeja", …)` at
//! `/bandeja`, `/bandeja/dashboard`, `nest("/bandeja/", …)` at `/bandeja/`).
//!
//! The page carries no secret. The operator types the admin token into it (or opens the
//! URL [`Server::dashboard_url`](crate::Server::dashboard_url) prints, whose `#token=`
//! fragment never reaches the server); it is kept in the tab's `sessionStorage` and sent
//! as `Authorization: Bearer`, a header no other site's page can make a browser send here
//! without a CORS preflight this server never grants. A per-response nonce in a strict
//! Content-Security-Policy lets only the page's own script and style run; data is
//! inserted as text, never as HTML.

use axum::http::{header, Uri};
use axum::response::{IntoResponse, Response};

const PAGE: &str = include_str!("dashboard.html");

/// Which route served the page, as the page's script reads it: `dashboard` when the path
/// the router saw ends in `/dashboard`, `root` otherwise. A fixed word, never the path.
fn served_at(uri: &Uri) -> &'static str {
    if uri.path().trim_end_matches('/').ends_with("/dashboard") {
        "dashboard"
    } else {
        "root"
    }
}

/// `GET /`, `GET /dashboard`.
pub(crate) async fn page(uri: Uri) -> Response {
    let nonce = format!("{:032x}", rand::random::<u128>());
    let csp = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    );
    let html = PAGE
        .replace("{{NONCE}}", &nonce)
        .replace("{{SERVED_AT}}", served_at(&uri));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_knows_which_route_served_it() {
        for (path, route) in [
            ("/", "root"),
            ("/dashboard", "dashboard"),
            ("/dashboard/", "dashboard"),
            ("/bandeja", "root"),
        ] {
            let uri: Uri = path.parse().expect("a path");
            assert_eq!(served_at(&uri), route, "{path}");
        }
    }
}
