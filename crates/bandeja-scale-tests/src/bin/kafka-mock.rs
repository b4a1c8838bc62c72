//! A Kafka-protocol cluster for tests whose services are separate processes: librdkafka's
//! mock cluster (`rdkafka::mocking::MockCluster`) in a process of its own, on localhost
//! ports. It prints `ready <bootstrap servers>` once listening, then reads commands on
//! standard input, answering each with `ok` once done:
//!
//! - `down`: every broker stops answering (an outage, as a broker stop or a cut network
//!   is to its clients);
//! - `up`: every broker answers again;
//! - `topic <name> <partitions>`: creates a topic.
//!
//! It exits when its standard input closes (its parent ended), so it never outlives a
//! test. The mock keeps everything in memory: it is a broker for tests, not a Kafka.

use std::io::{BufRead, Write};

use clap::Parser;
use rdkafka::mocking::MockCluster;

/// A mock Kafka cluster on localhost.
#[derive(Parser)]
struct Args {
    /// How many brokers.
    #[arg(long, default_value_t = 3)]
    brokers: i32,
}

fn main() -> Result<(), String> {
    let args = Args::parse();
    let cluster =
        MockCluster::new(args.brokers).map_err(|e| format!("start the mock cluster: {e}"))?;
    let mut out = std::io::stdout();
    writeln!(out, "ready {}", cluster.bootstrap_servers()).map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let done = match words.as_slice() {
            ["down"] => (1..=args.brokers).try_for_each(|id| cluster.broker_down(id)),
            ["up"] => (1..=args.brokers).try_for_each(|id| cluster.broker_up(id)),
            ["topic", name, partitions] => {
                let partitions: i32 = partitions
                    .parse()
                    .map_err(|e| format!("{partitions}: {e}"))?;
                cluster.create_topic(name, partitions, 1)
            }
            _ => {
                return Err(format!(
                    "unknown command {line:?}: down, up, or topic <name> <partitions>"
                ))
            }
        };
        done.map_err(|e| format!("{line}: {e}"))?;
        writeln!(out, "ok").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}
