//! `bandeja-bench`: how fast bandeja moves messages on this machine.
//!
//! ```text
//! cargo run --release -p bandeja-bench -- --store sqlite --mode drain --messages 20000
//! cargo run --release -p bandeja-bench -- --store postgres --mode live --rate 200 --seconds 20
//! cargo run --release -p bandeja-bench -- --store postgres --mode drain --messages 100000 --processes 3
//! ```
//!
//! Each run prints progress on stderr and one JSON line with the figures on stdout.

mod args;
mod db;
mod handler;
mod run;

use clap::Parser;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BANDEJA_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = args::Args::parse();
    if let Err(error) = run::run(args).await {
        eprintln!("bandeja-bench: {error}");
        std::process::exit(1);
    }
}
