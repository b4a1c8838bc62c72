//! `chaos`: runs one chaos plan (see `bandeja_scale_tests::chaos`) and prints its report;
//! exits 0 when the contract held, 1 when a rule broke, 2 when the run could not be made.
//!
//! ```text
//! cargo build --release -p bandeja-scale-tests
//! target/release/chaos --workers 3 --messages 50000 --kills 20 --crash-points
//! target/release/chaos --transport nats --broker-outage-at 20 --broker-outage 30
//! target/release/chaos --transport kafka --broker-outage-at 14 --broker-outage 30
//! target/release/chaos --transport kafka --kafka-brokers tansu --kills 10 --crash-points
//! target/release/chaos --restart-database-at 20 --kills 5
//! target/release/chaos --messages 1000000 --kills 0 --emit-rate 0 --sample-every 10
//! ```

use bandeja_scale_tests::chaos::{self, Plan};
use clap::Parser;

#[tokio::main]
async fn main() {
    // Its arguments are the plan's; the format comes from BANDEJA_LOG_FORMAT.
    bandeja_scale_tests::log_to_stderr("error", None);
    let plan = Plan::parse();
    let report = match chaos::run(&plan).await {
        Ok(report) => report,
        Err(error) => {
            eprintln!("chaos: the run could not be made: {error}");
            std::process::exit(2);
        }
    };
    print!("{}", report.text());
    if let Some(path) = &plan.report {
        let written = serde_json::to_string_pretty(&report)
            .map_err(|e| e.to_string())
            .and_then(|json| std::fs::write(path, json).map_err(|e| e.to_string()));
        if let Err(error) = written {
            eprintln!(
                "chaos: cannot write the report to {}: {error}",
                path.display()
            );
            std::process::exit(2);
        }
    }
    if !report.passed() {
        std::process::exit(1);
    }
}
