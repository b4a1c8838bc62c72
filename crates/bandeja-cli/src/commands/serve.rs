//! `bandeja serve`: the HTTP endpoints and the dashboard of `bandeja-http`, standalone,
//! until Ctrl-C or SIGTERM.
//!
//! It runs no workers: `/health/live` is UP while it answers, `/health/ready` follows the
//! database, the stuck boxes and `--failed-threshold`. Its `/metrics` has the Prometheus
//! recorder installed like an application's, but this process handles no message, so the
//! runtime's counter and histogram families are there (`# HELP`, `# TYPE`) without samples;
//! what it measures is the database: the box and subscription gauges, for the whole fleet.
//! Scrape the application processes for throughput and latency.

use bandeja_core::admin::Admin;
use bandeja_http::HttpOptions;

use crate::cli::ServeArgs;
use crate::error::CliError;
use crate::output;

/// What `--json` prints once listening, as one line.
#[derive(serde::Serialize)]
struct Listening {
    /// The address bound.
    listen: String,
    /// The dashboard, with the token in the URL fragment when it was generated.
    dashboard_url: String,
    /// Whether the token was generated for this run.
    token_generated: bool,
}

/// Binds, says where, and serves until interrupted.
pub(crate) async fn run<S: Admin>(store: S, args: &ServeArgs, json: bool) -> Result<(), CliError> {
    let mut options = HttpOptions::new().stuck_threshold(args.stuck_threshold);
    if let Some(token) = &args.token {
        options = options.token(token.clone());
    }
    if let Some(threshold) = args.failed_threshold {
        options = options.failed_threshold(threshold);
    }
    match bandeja_http::metrics::install_recorder() {
        Ok(handle) => options = options.metrics(handle),
        // Not this binary's case (it installs no other), but never a reason not to serve.
        Err(error) => output::note(&format!(
            "serving /metrics without the process's recorder: {error}"
        )),
    }
    let server = bandeja_http::bind(store, options, args.listen).await?;
    let addr = server.local_addr();
    let generated = server.token_generated();
    // A configured token stays out of the output; a generated one must be shown.
    let dashboard_url = if generated {
        server.dashboard_url()
    } else {
        format!("http://{addr}/")
    };
    if json {
        output::json_line(&Listening {
            listen: addr.to_string(),
            dashboard_url,
            token_generated: generated,
        })?;
    } else {
        output::line(&format!(
            "listening on http://{addr} (GET /health, /health/live, /health/ready, /boxes, /metrics); dashboard: {dashboard_url}"
        ))?;
        if generated {
            output::line("admin token generated for this run (pass --token to choose one)")?;
        }
    }
    Ok(server.run(shutdown_signal()).await?)
}

/// Resolves on Ctrl-C or (Unix) SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        // If the handler cannot be installed, only SIGTERM (or a kill) stops the server.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
