//! `bandeja-bench`: how fast bandeja moves messages on this machine.
//!
//! ```text
//! cargo run --release -p bandeja-bench -- --store sqlite --mode drain --messages 20000
//! cargo run --release -p bandeja-bench -- --store postgres --mode live --rate 200 --seconds 20
//! cargo run --release -p bandeja-bench -- --store postgres --mode drain --messages 100000 --processes 3
//! cargo run --release -p bandeja-bench -- --store postgres --transport nats --mode drain
//! cargo run --release -p bandeja-bench -- --store postgres --transport amqp --mode live --rate 500
//! cargo run --release -p bandeja-bench -- --store postgres --mode drain --messages 2000 --handler-ms 50 --processes 2
//! ```
//!
//! With `--handler-ms N` every handler awaits a sleep of N ms inside its transaction (one
//! handler per message unless `--handler batch`); the drain's JSON line then also carries
//! the ideal throughput (processes × `--concurrency` / N ms) and the ratio to it, and
//! every drain reports what it left in the inbox: rows retried, the highest
//! `retry_count`, rows FAILED.
//!
//! With `--transport nats|amqp` the benchmark's service publishes its events to the broker
//! and consumes them back into its inbox (one database, one broker hop each way), so the
//! figures include the hop: publish with acknowledgement, delivery, inbox insert, ack.
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
    let mut args = args::Args::parse();
    if args.broker_prefix.is_none() {
        args.broker_prefix = Some(format!("bench{:08x}", rand::random::<u32>()));
    }
    if let Err(error) = run::run(args).await {
        eprintln!("bandeja-bench: {error}");
        std::process::exit(1);
    }
}
