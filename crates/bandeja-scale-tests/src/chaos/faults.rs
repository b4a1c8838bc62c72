//! The infrastructure faults of a chaos run: PostgreSQL restarted under the workers; the
//! run's own `nats-server` killed (its connections cut without a close) and started again
//! after a while; the workers partitioned from the broker (connections open, no byte
//! moving) and healed.

use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection};

use super::ms;
use super::proxy::PartitionProxy;
use super::OwnBroker;

/// An outage the run caused.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outage {
    /// When it began, in milliseconds since emission started.
    pub at_ms: u64,
    /// How long the service was unusable, in milliseconds.
    pub down_ms: u64,
    /// What was done.
    pub detail: String,
}

/// Runs `command` with `sh -c`.
async fn shell(command: &str) -> Result<(), String> {
    let status = tokio::process::Command::new("sh")
        .args(["-c", command])
        .status()
        .await
        .map_err(|e| format!("cannot run `{command}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{command}` failed: {status}"))
    }
}

/// At `at`, runs `stop`, keeps PostgreSQL stopped for `down`, runs `start`, then waits
/// until `url` accepts a connection again; `down_ms` runs from the stop to that connection.
pub(crate) async fn restart_database(
    url: String,
    (stop, start): (String, String),
    down: Duration,
    at: Instant,
    started: Instant,
) -> Result<Outage, String> {
    tokio::time::sleep_until(at.into()).await;
    let began = Instant::now();
    eprintln!("chaos: stopping PostgreSQL for {down:?}: {stop}");
    shell(&stop).await?;
    // The outage itself: the database stays away this long.
    tokio::time::sleep(down).await;
    shell(&start).await?;
    let deadline = began + Duration::from_secs(120);
    loop {
        if let Ok(conn) = PgConnection::connect(&url).await {
            let _ = conn.close().await;
            break;
        }
        if Instant::now() >= deadline {
            return Err("PostgreSQL did not come back within 2 minutes".to_owned());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let outage = Outage {
        at_ms: ms(began - started),
        down_ms: ms(began.elapsed()),
        detail: format!("PostgreSQL stopped, started again {down:?} later"),
    };
    eprintln!("chaos: PostgreSQL is back after {} ms", outage.down_ms);
    Ok(outage)
}

/// At `at`, SIGKILLs `server` (no close reaches its clients; the Kafka mock: takes its
/// brokers down), keeps it down for `down`, then starts it again on the same store (brings
/// them up); gives the server back with the outage.
pub(crate) fn broker_outage(
    mut server: OwnBroker,
    at: Instant,
    down: Duration,
    started: Instant,
) -> (OwnBroker, Result<Outage, String>) {
    std::thread::sleep(at.saturating_duration_since(Instant::now()));
    let began = Instant::now();
    let name = server.name();
    eprintln!(
        "chaos: a broker outage of {down:?} ({name}: {})",
        server.outage()
    );
    let outage = server.kill().and_then(|()| {
        // The outage itself: the broker stays away this long.
        std::thread::sleep(down.saturating_sub(began.elapsed()));
        server.resume()
    });
    let outage = outage.map(|()| Outage {
        at_ms: ms(began - started),
        down_ms: ms(began.elapsed()),
        detail: format!("{name} {} after {down:?}", server.outage()),
    });
    eprintln!("chaos: {name} is back");
    (server, outage)
}

/// At `at`, partitions the workers from the broker behind `proxy` for `down`, then heals.
pub(crate) async fn broker_partition(
    proxy: std::sync::Arc<PartitionProxy>,
    at: Instant,
    down: Duration,
    started: Instant,
) -> Outage {
    tokio::time::sleep_until(at.into()).await;
    let began = Instant::now();
    eprintln!("chaos: partitioning the workers from the broker for {down:?}");
    proxy.partition(true);
    // The partition itself: nothing gets through for this long.
    tokio::time::sleep(down).await;
    proxy.partition(false);
    eprintln!("chaos: partition healed");
    Outage {
        at_ms: ms(began - started),
        down_ms: ms(began.elapsed()),
        detail: format!("no byte between workers and broker for {down:?}, connections left open"),
    }
}
