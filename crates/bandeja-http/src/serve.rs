//! Serving the router standalone (what `bandeja serve --listen ADDR` uses): bind to
//! loopback by default, refuse a non-loopback address without a configured token.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use bandeja_core::admin::Admin;

use crate::options::HttpOptions;

/// The default address: loopback only, port 8080.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A non-loopback address without a token: anyone who can reach it could read
    /// payloads and retry, replay or purge messages.
    #[error("refusing to listen on {addr} without an admin token: anyone who can reach that address could act on your messages. Configure a token (bandeja serve --token, or BANDEJA_ADMIN_TOKEN), or listen on 127.0.0.1")]
    NonLoopbackWithoutToken {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The address could not be bound (in use, not local, no permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// The server failed while running.
    #[error("the HTTP server failed: {0}")]
    Serve(#[source] std::io::Error),
}

/// A bound server, ready to [`run`](Server::run).
pub struct Server {
    listener: tokio::net::TcpListener,
    router: axum::Router,
    addr: SocketAddr,
    token: String,
    generated: bool,
}

/// Binds `listen` for the endpoints over `admin`.
///
/// A non-loopback address (including `0.0.0.0`) needs a token in `options`
/// ([`ServeError::NonLoopbackWithoutToken`] otherwise). On loopback without a token, a
/// random one is generated for this run ([`Server::token`]; print
/// [`Server::dashboard_url`] for the operator), so that admin actions still need it: any
/// local process or web page could otherwise reach them.
pub async fn bind<A: Admin>(
    admin: A,
    options: HttpOptions,
    listen: SocketAddr,
) -> Result<Server, ServeError> {
    if options.token.is_none() && !listen.ip().is_loopback() {
        return Err(ServeError::NonLoopbackWithoutToken { addr: listen });
    }
    let (options, generated) = match &options.token {
        Some(_) => (options, false),
        None => {
            let token = format!("{:032x}", rand::random::<u128>());
            (options.token(token), true)
        }
    };
    let token = options
        .token
        .as_ref()
        .map(|t| t.as_str().to_owned())
        .unwrap_or_default();
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: listen,
        source,
    })?;
    Ok(Server {
        listener,
        router: crate::router(admin, options),
        addr,
        token,
        generated,
    })
}

impl Server {
    /// The address actually bound (the port is known even when `0` was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The admin token in force (the configured one, or the one generated for this run).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Whether [`Server::token`] was generated because none was configured.
    pub fn token_generated(&self) -> bool {
        self.generated
    }

    /// The dashboard URL with the token in its fragment (`#token=…`: browsers never send
    /// fragments to the server; the page moves it into the tab's session storage).
    pub fn dashboard_url(&self) -> String {
        format!("http://{}/#token={}", self.addr, self.token)
    }

    /// Serves until `shutdown` resolves, then finishes the requests in flight.
    pub async fn run<F>(self, shutdown: F) -> Result<(), ServeError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        tracing::info!(addr = %self.addr, "bandeja HTTP endpoints listening");
        // The peer address reaches the handlers (the audit lines of admin actions name it).
        let service = self
            .router
            .into_make_service_with_connect_info::<SocketAddr>();
        axum::serve(self.listener, service)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(ServeError::Serve)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_address_is_loopback() {
        assert!(DEFAULT_LISTEN.ip().is_loopback());
    }
}
