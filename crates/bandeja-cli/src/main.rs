//! `bandeja`: the operator's command for bandeja's message boxes.
//!
//! Parses the command line (clap), opens the store named by `--database`, runs the
//! command through the store's [`Admin`](bandeja_core::admin::Admin) capability and ends
//! with one of the documented exit codes (see [`error::Exit`]). `schema check` reads
//! files and opens no store.

mod args;
mod audit;
mod cli;
mod commands;
mod confirm;
mod connect;
mod error;
mod output;
mod progress;
mod run;
mod scan;
mod table;
mod view;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::error::{CliError, Exit};

fn main() -> ExitCode {
    // Usage errors end here with clap's message and exit code 2; --help and --version with 0.
    let cli = cli::Cli::parse();
    init_logging(&cli);
    // `schema check` reads files: no runtime, no configuration, no database.
    if let Some(outcome) = run::without_store(&cli) {
        return match outcome {
            Ok(()) => ExitCode::from(Exit::Ok.code()),
            Err(error) => report(&error),
        };
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return report(&CliError::Io(e)),
    };
    match runtime.block_on(connect::open_and_run(cli)) {
        Ok(()) => ExitCode::from(Exit::Ok.code()),
        Err(error) => report(&error),
    }
}

/// Logs to stderr through bandeja's set-up (`BANDEJA_LOG`, `--log-format`): `info` for
/// `serve` (its admin actions, what it serves), `warn` for the other commands (their
/// output is the report).
fn init_logging(cli: &cli::Cli) {
    let default_filter = match cli.command {
        cli::Command::Serve(_) => "info",
        _ => "warn",
    };
    let installed = bandeja_core::logging::Logging::new()
        .default_filter(default_filter)
        .format(cli.log_format)
        .init();
    if let Err(error) = installed {
        let _ = writeln!(std::io::stderr(), "warning: {error}");
    }
}

/// Prints `error` on stderr (unless stdout was closed by a pager) and returns its exit code.
fn report(error: &CliError) -> ExitCode {
    if error.is_broken_pipe() {
        return ExitCode::from(Exit::Ok.code());
    }
    let _ = writeln!(std::io::stderr(), "error: {error}");
    ExitCode::from(error.exit().code())
}
