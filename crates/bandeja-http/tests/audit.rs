//! The audit lines of admin actions over HTTP, captured by a test subscriber: an action
//! done logs the caller (peer address, user agent, token valid) and what it did; a refused
//! one logs WARN with why; the token itself is never in any line. Served on a real socket
//! (the peer is the socket's) and nested in an app without `ConnectInfo` (the peer is the
//! forwarding header's).

mod common;

use std::fmt::{Debug, Write as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use bandeja_http::{bind, router, HttpOptions};
use common::{sqlite_store, start_with_a_failed_order};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const TOKEN: &str = "s3cret-audit-token";
const WRONG: &str = "not-the-token-at-all";

/// Every event as one line: `LEVEL target field=value…`.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }
}

impl Subscriber for Lines {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut line = format!("{} {}", meta.level(), meta.target());
        event.record(&mut Fields(&mut line));
        if let Ok(mut lines) = self.0.lock() {
            lines.push(line);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Lines {
    fn all(&self) -> Vec<String> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The audit lines of `action`.
    fn of(&self, action: &str) -> Vec<String> {
        let wanted = format!(" action={action} ");
        self.all()
            .into_iter()
            .filter(|l| l.contains("bandeja_http::audit") && l.contains(&wanted))
            .collect()
    }
}

/// Sends one HTTP/1.1 request to `addr` and returns the status code.
async fn post(addr: SocketAddr, path: &str, token: &str, agent: &str) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         User-Agent: {agent}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).await.expect("read");
    reply
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP reply: {reply}"))
}

// One thread: the server's tasks log through this test's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn an_action_over_a_socket_logs_the_peer_and_never_the_token() {
    let lines = Lines::default();
    let _guard = tracing::subscriber::set_default(lines.clone());
    let (store, _file) = sqlite_store().await;
    let server = bind(
        store,
        HttpOptions::new().token(TOKEN),
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
    )
    .await
    .expect("bind");
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));

    let done = post(addr, "/retry?type=OrderPlaced", TOKEN, "audit-test/1.0").await;
    assert_eq!(done, 200);
    let purged = post(addr, "/purge?older_than=7d", TOKEN, "audit-test/1.0").await;
    assert_eq!(purged, 200);
    let refused = post(addr, "/retry", WRONG, "intruder/0.1").await;
    assert_eq!(refused, 403);
    let _ = stop.send(());
    serving.await.expect("join").expect("served");

    let retries = lines.of("retry");
    assert_eq!(retries.len(), 2, "{:#?}", lines.all());
    let done = &retries[0];
    assert!(done.starts_with("INFO bandeja_http::audit"), "{done}");
    assert!(done.contains(" peer=127.0.0.1:"), "{done}");
    assert!(done.contains(" peer_from=socket"), "{done}");
    assert!(done.contains(" user_agent=audit-test/1.0"), "{done}");
    assert!(done.contains(" token=valid"), "{done}");
    assert!(done.contains(" filter=type=OrderPlaced"), "{done}");
    assert!(done.contains(" details=retried=0"), "{done}");
    let refused = &retries[1];
    assert!(refused.starts_with("WARN bandeja_http::audit"), "{refused}");
    assert!(refused.contains("admin action refused"), "{refused}");
    assert!(refused.contains(" token=wrong"), "{refused}");
    assert!(refused.contains(" user_agent=intruder/0.1"), "{refused}");

    let purges = lines.of("purge");
    assert_eq!(purges.len(), 1, "{:#?}", lines.all());
    assert!(
        purges[0].starts_with("WARN bandeja_http::audit"),
        "a purge deletes rows: {}",
        purges[0]
    );
    assert!(purges[0].contains("purged=0"), "{}", purges[0]);

    for line in lines.all() {
        assert!(
            !line.contains(TOKEN) && !line.contains(WRONG),
            "a token in the logs: {line}"
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn nested_without_connect_info_the_peer_is_the_forwarded_one() {
    let (store, _file) = sqlite_store().await;
    let (running, event) = start_with_a_failed_order(&store, 7).await;
    let lines = Lines::default();
    let _guard = tracing::subscriber::set_default(lines.clone());
    let app = Router::new().nest("/bandeja", router(store, HttpOptions::new().token(TOKEN)));
    let request = Request::post(format!(
        "/bandeja/messages/{}/retry?box=inbox_events&subscriber=billing",
        event.id
    ))
    .header("authorization", format!("Bearer {TOKEN}"))
    .header("x-forwarded-for", "203.0.113.9, 10.0.0.2")
    .body(Body::empty())
    .expect("request");
    let response = app.oneshot(request).await.expect("the router never fails");
    assert_eq!(response.status(), StatusCode::OK);
    running.shutdown().await;

    let retried = lines.of("retry one");
    assert_eq!(retried.len(), 1, "{:#?}", lines.all());
    let line = &retried[0];
    assert!(
        line.contains(&format!(" message_id={}", event.id)),
        "{line}"
    );
    assert!(line.contains(" peer=203.0.113.9"), "{line}");
    assert!(line.contains(" peer_from=x-forwarded-for"), "{line}");
    assert!(line.contains(" details=retried=1"), "{line}");
    assert!(
        !line.contains("user_agent"),
        "no user agent, no field: {line}"
    );
    assert!(!line.contains(TOKEN), "{line}");
}
