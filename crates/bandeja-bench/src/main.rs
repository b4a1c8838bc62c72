//! `bandeja-bench`: how fast bandeja moves messages on this machine.
//!
//! ```text
//! cargo run --release -p bandeja-bench -- --store sqlite --mode drain --messages 20000
//! cargo run --release -p bandeja-bench -- --store postgres --mode live --rate 200 --seconds 20
//! cargo run --release -p bandeja-bench -- --store postgres --mode drain --messages 100000 --processes 3
//! cargo run --release -p bandeja-bench -- --store postgres --transport nats --mode drain
//! cargo run --release -p bandeja-bench -- --store postgres --transport amqp --mode live --rate 500
//! cargo run --release -p bandeja-bench -- --store postgres --transport kafka --mode drain
//! cargo run --release -p bandeja-bench -- --store postgres --mode drain --messages 2000 --handler-ms 50 --processes 2
//! ```
//!
//! With `--handler-ms N` every handler awaits a sleep of N ms inside its transaction (one
//! handler per message unless `--handler batch`); the drain's JSON line then also carries
//! the ideal throughput (processes × `--concurrency` / N ms) and the ratio to it, and
//! every drain reports what it left in the inbox: rows retried, the highest
//! `retry_count`, rows FAILED.
//!
//! With `--transport nats|amqp|redis|kafka` the benchmark's service publishes its events to the broker
//! and consumes them back into its inbox (one database, one broker hop each way), so the
//! figures include the hop: publish with acknowledgement, delivery, inbox insert, ack.
//!
//! A one-process drain's clock starts once the service is started (with a broker, after
//! its subscriptions are set up: a new Kafka group waits for the brokers' initial
//! rebalance delay, 3 s by default); that start is `start_seconds` of the JSON line.
//! Against a broker other than the mock, `--broker-url` (Kafka: bootstrap servers).
//!
//! Each run prints progress on stderr and one JSON line with the figures on stdout. A live
//! run's `latency_p50_ms` / `latency_p99_ms` end when the handler is called (its effect
//! row); `completed_p50_ms` / `completed_p99_ms` end when the completion has committed
//! (the library's commit→handled histogram; with `--processes 1` only), the interval of
//! graphile-worker's `trickle` `complete_*`.

mod args;
mod broker;
mod completed;
mod db;
mod handler;
mod run;

use clap::Parser;

/// The benchmark's arguments and its logging flag.
#[derive(Debug, Parser)]
#[command(name = "bandeja-bench", version, about)]
struct Cli {
    #[command(flatten)]
    args: args::Args,
    /// Log lines on stderr as `text` or `json` (one object per line); the filter is
    /// `BANDEJA_LOG` (default `warn`).
    #[arg(long, env = "BANDEJA_LOG_FORMAT", value_name = "FORMAT")]
    log_format: Option<bandeja::logging::LogFormat>,
}

#[tokio::main]
async fn main() {
    let Cli {
        mut args,
        log_format,
    } = Cli::parse();
    let logging = bandeja::logging::Logging::new()
        .default_filter("warn")
        .format(log_format)
        .init();
    if let Err(error) = logging {
        eprintln!("bandeja-bench: {error}");
        std::process::exit(2);
    }
    if args.broker_prefix.is_none() {
        args.generated_prefix = !args.worker_only;
        args.broker_prefix = Some(format!("bench{:08x}", rand::random::<u32>()));
    }
    if args.transport == args::TransportKind::Kafka && args.broker_url.is_none() {
        let prefix = args.broker_prefix.clone().unwrap_or_default();
        match broker::kafka_mock(&prefix, args.partitions) {
            Ok(servers) => {
                eprintln!("kafka: librdkafka's mock cluster in this process at {servers}");
                args.broker_url = Some(servers);
                args.kafka_mock = true;
            }
            Err(error) => {
                eprintln!("bandeja-bench: cannot start the mock Kafka cluster: {error}");
                std::process::exit(1);
            }
        }
    }
    if let Err(error) = run::run(args).await {
        eprintln!("bandeja-bench: {error}");
        std::process::exit(1);
    }
}
