//! The audit lines of the operator actions over HTTP: who did what.
//!
//! Who is the [`Caller`] (an extractor every action handler takes): the peer address (the
//! socket's, when the server was started with `ConnectInfo`, as [`bind`](crate::bind)
//! does; else the first hop of `X-Forwarded-For` or `Forwarded`; else `unknown`), the
//! `User-Agent`, and whether the admin token was presented and valid. The token itself is
//! never logged. What is the action's name and its [`Details`]: the message id when it is
//! about one message, the filter, the counts.
//!
//! A handler checks the token through its caller, then, once the action is done, writes
//! one line: INFO through [`action`], WARN through [`destructive`] (rows deleted or
//! discarded):
//!
//! ```text
//! caller.require_token("retry")?;                // a refusal is logged (WARN) with the caller
//! let retried = state.admin.retry(&filter).await?;
//! audit::action(&caller, "retry", Details::new().filter(&filter).with("retried", retried));
//! ```
//!
//! The lines have the target `bandeja_http::audit` (`BANDEJA_LOG=warn,bandeja_http::audit=info`
//! keeps them and little else).

use std::convert::Infallible;
use std::fmt::{Display, Write as _};
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use bandeja_core::admin::MessageFilter;
use bandeja_core::MessageId;

use crate::auth;
use crate::error::ApiError;
use crate::router::AppState;

/// Longest header value (user agent, forwarded address) an audit line carries.
const MAX_HEADER_LEN: usize = 160;

/// What the request presented of the admin token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenCheck {
    /// The configured token.
    Valid,
    /// A bearer token that is not the configured one.
    Wrong,
    /// No bearer token.
    Missing,
    /// No token is configured: actions are refused.
    NotConfigured,
}

impl TokenCheck {
    fn as_str(self) -> &'static str {
        match self {
            TokenCheck::Valid => "valid",
            TokenCheck::Wrong => "wrong",
            TokenCheck::Missing => "missing",
            TokenCheck::NotConfigured => "none configured",
        }
    }
}

/// Who made a request: peer, user agent, token check (never the token).
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// The peer address, or `unknown`.
    peer: String,
    /// Where `peer` comes from: `socket`, `x-forwarded-for`, `forwarded` or `unknown`.
    peer_from: &'static str,
    /// The first hop of the forwarding headers when `peer` is the socket's (a proxy's).
    forwarded_for: Option<String>,
    user_agent: Option<String>,
    token: TokenCheck,
}

impl<A: Send + Sync + 'static> FromRequestParts<Arc<AppState<A>>> for Caller {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState<A>>,
    ) -> Result<Self, Self::Rejection> {
        let socket = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.to_string());
        let token = match auth::require_token(&state.options, &parts.headers) {
            Ok(()) => TokenCheck::Valid,
            Err(ApiError::WrongToken) => TokenCheck::Wrong,
            Err(ApiError::NoTokenConfigured) => TokenCheck::NotConfigured,
            Err(_) => TokenCheck::Missing,
        };
        Ok(Caller::new(socket, &parts.headers, token))
    }
}

impl Caller {
    /// The caller of a request with `headers`, whose socket peer is `socket` (if known).
    pub(crate) fn new(socket: Option<String>, headers: &HeaderMap, token: TokenCheck) -> Caller {
        let forwarded = forwarded_for(headers);
        let (peer, peer_from, forwarded_for) = match (socket, forwarded) {
            (Some(socket), forwarded) => (socket, "socket", forwarded.map(|(_, hop)| hop)),
            (None, Some((from, hop))) => (hop, from, None),
            (None, None) => ("unknown".to_owned(), "unknown", None),
        };
        Caller {
            peer,
            peer_from,
            forwarded_for,
            user_agent: header_text(headers, header::USER_AGENT.as_str()),
            token,
        }
    }

    /// Who this caller is, as a record of an action keeps it (a discarded row's
    /// `discarded_by`): `http from <peer>` (and the first forwarded hop behind a proxy).
    pub(crate) fn describe(&self) -> String {
        match &self.forwarded_for {
            Some(hop) => format!("http from {hop} via {}", self.peer),
            None => format!("http from {}", self.peer),
        }
    }

    /// The admin token check of a state-changing endpoint: `Ok` when the request
    /// presented the configured token; otherwise the error to answer with, after a WARN
    /// line naming the caller and `action`.
    pub(crate) fn require_token(&self, action: &'static str) -> Result<(), ApiError> {
        let refused = match self.token {
            TokenCheck::Valid => return Ok(()),
            TokenCheck::Wrong => ApiError::WrongToken,
            TokenCheck::Missing => ApiError::MissingToken,
            TokenCheck::NotConfigured => ApiError::NoTokenConfigured,
        };
        tracing::warn!(
            action,
            peer = %self.peer,
            peer_from = self.peer_from,
            forwarded_for = self.forwarded_for.as_deref(),
            user_agent = self.user_agent.as_deref(),
            token = self.token.as_str(),
            "admin action refused: the admin token is {}",
            self.token.as_str()
        );
        Err(refused)
    }
}

/// What an action did: the message it was about, the filter it took, its counts.
#[derive(Debug, Default)]
#[must_use]
pub(crate) struct Details {
    message_id: Option<MessageId>,
    filter: Option<String>,
    /// `name=value` pairs, space-separated.
    rest: String,
}

impl Details {
    /// No details yet.
    pub(crate) fn new() -> Details {
        Details::default()
    }

    /// The action was about message `id`.
    pub(crate) fn message(mut self, id: MessageId) -> Details {
        self.message_id = Some(id);
        self
    }

    /// The filter the action took (only the parts set; `none` when nothing is set).
    pub(crate) fn filter(mut self, filter: &MessageFilter) -> Details {
        self.filter = Some(compact(filter));
        self
    }

    /// A list the record must keep whole (the message ids of a selection: at most
    /// [`MAX_SELECTION`](crate::discard::MAX_SELECTION) of them).
    pub(crate) fn whole(mut self, name: &str, value: impl Display) -> Details {
        if !self.rest.is_empty() {
            self.rest.push(' ');
        }
        let _ = write!(self.rest, "{name}={value}");
        self
    }

    /// A count or any other value (`retried=3`, `settle=discard`), cut at 160 characters.
    pub(crate) fn with(mut self, name: &str, value: impl Display) -> Details {
        if !self.rest.is_empty() {
            self.rest.push(' ');
        }
        let start = self.rest.len();
        let _ = write!(self.rest, "{name}={value}");
        cut(&mut self.rest, start + name.len() + 1 + MAX_HEADER_LEN);
        self
    }
}

/// Logs an action done by `caller` at INFO.
pub(crate) fn action(caller: &Caller, action: &'static str, details: Details) {
    log(tracing::Level::INFO, caller, action, &details);
}

/// Logs a destructive action (rows deleted or discarded) done by `caller` at WARN.
pub(crate) fn destructive(caller: &Caller, action: &'static str, details: Details) {
    log(tracing::Level::WARN, caller, action, &details);
}

fn log(level: tracing::Level, caller: &Caller, action: &'static str, details: &Details) {
    macro_rules! line {
        ($level:expr) => {
            tracing::event!(
                $level,
                action,
                message_id = details.message_id.map(tracing::field::display),
                filter = details.filter.as_deref(),
                details = (!details.rest.is_empty()).then_some(details.rest.as_str()),
                peer = %caller.peer,
                peer_from = caller.peer_from,
                forwarded_for = caller.forwarded_for.as_deref(),
                user_agent = caller.user_agent.as_deref(),
                token = caller.token.as_str(),
                "admin action over HTTP: {action}"
            )
        };
    }
    if level == tracing::Level::WARN {
        line!(tracing::Level::WARN);
    } else {
        line!(tracing::Level::INFO);
    }
}

/// The set parts of `filter`, `key=value` joined by `,`; `none` when nothing is set.
fn compact(filter: &MessageFilter) -> String {
    let mut parts: Vec<String> = Vec::new();
    fn part(parts: &mut Vec<String>, key: &str, value: Option<impl Display>) {
        if let Some(value) = value {
            parts.push(format!("{key}={value}"));
        }
    }
    part(&mut parts, "box", filter.box_kind);
    part(&mut parts, "status", filter.status);
    part(&mut parts, "tenant", filter.tenant.as_ref());
    part(&mut parts, "type", filter.message_type.as_ref());
    part(&mut parts, "subscriber", filter.subscriber.as_ref());
    part(&mut parts, "since", filter.since);
    part(&mut parts, "until", filter.until);
    part(&mut parts, "id", filter.id);
    part(&mut parts, "completed_before", filter.completed_before);
    part(&mut parts, "correlation_id", filter.correlation_id.as_ref());
    part(&mut parts, "archived_before", filter.archived_before);
    if filter.archived {
        parts.push("archived=true".to_owned());
    }
    if parts.is_empty() {
        return "none".to_owned();
    }
    let mut text = parts.join(",");
    cut(&mut text, 4 * MAX_HEADER_LEN);
    text
}

/// The first hop of `X-Forwarded-For`, else the `for=` of the first `Forwarded` element,
/// with the header it came from.
fn forwarded_for(headers: &HeaderMap) -> Option<(&'static str, String)> {
    if let Some(list) = header_text(headers, "x-forwarded-for") {
        let hop = list.split(',').next().unwrap_or_default().trim();
        if !hop.is_empty() {
            return Some(("x-forwarded-for", hop.to_owned()));
        }
    }
    let forwarded = header_text(headers, header::FORWARDED.as_str())?;
    let first = forwarded.split(',').next().unwrap_or_default();
    first.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("for")
            .then(|| ("forwarded", value.trim().trim_matches('"').to_owned()))
            .filter(|(_, hop)| !hop.is_empty())
    })
}

/// A header's value as text, cut at [`MAX_HEADER_LEN`]; `None` when absent or not text.
fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut text = headers.get(name)?.to_str().ok()?.trim().to_owned();
    cut(&mut text, MAX_HEADER_LEN);
    (!text.is_empty()).then_some(text)
}

/// Cuts `text` at `len` bytes (at a character boundary), marking the cut with `…`.
fn cut(text: &mut String, len: usize) {
    if text.len() > len {
        let mut end = len;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn the_peer_is_the_socket_else_the_forwarding_headers_else_unknown() {
        let proxied = headers(&[("x-forwarded-for", "203.0.113.7, 10.0.0.1")]);
        let caller = Caller::new(Some("10.0.0.1:4000".into()), &proxied, TokenCheck::Valid);
        assert_eq!(
            (caller.peer.as_str(), caller.peer_from),
            ("10.0.0.1:4000", "socket")
        );
        assert_eq!(caller.forwarded_for.as_deref(), Some("203.0.113.7"));
        let nested = Caller::new(None, &proxied, TokenCheck::Valid);
        assert_eq!(
            (nested.peer.as_str(), nested.peer_from),
            ("203.0.113.7", "x-forwarded-for")
        );
        let standard = headers(&[("forwarded", "for=\"[2001:db8::1]:443\";proto=https, for=x")]);
        let nested = Caller::new(None, &standard, TokenCheck::Missing);
        assert_eq!(
            (nested.peer.as_str(), nested.peer_from),
            ("[2001:db8::1]:443", "forwarded")
        );
        let bare = Caller::new(None, &HeaderMap::new(), TokenCheck::Missing);
        assert_eq!((bare.peer.as_str(), bare.peer_from), ("unknown", "unknown"));
    }

    #[test]
    fn a_filter_shows_only_what_is_set() {
        assert_eq!(compact(&MessageFilter::default()), "none");
        let filter = MessageFilter {
            status: Some(bandeja_core::MessageStatus::Failed),
            message_type: Some("Ping".into()),
            ..MessageFilter::default()
        };
        assert_eq!(compact(&filter), "status=FAILED,type=Ping");
        let details = Details::new().with("retried", 3).with("settle", "discard");
        assert_eq!(details.rest, "retried=3 settle=discard");
    }
}
