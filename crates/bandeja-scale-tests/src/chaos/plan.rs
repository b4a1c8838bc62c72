//! What a chaos run does: the workload, the faults and the bounds, as command-line flags of
//! the `chaos` binary (and a value the tests can build).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

/// How the workers move messages from the outbox to the inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportKind {
    /// The in-process transport: each worker moves outbox rows into the inbox itself.
    InProcess,
    /// NATS JetStream: workers publish and consume as the service `scale`.
    Nats,
    /// Redis Streams, the same way, on a `redis-server` of the run's own that keeps an
    /// append-only file synced at every write (from `REDIS_SERVER`, default
    /// `/usr/bin/redis-server`).
    Redis,
    /// Kafka, the same way, on brokers of the run's own (`--kafka-brokers`). No proxy
    /// partitions them: Kafka clients reconnect to the brokers' advertised address.
    Kafka,
}

/// The Kafka brokers of a `--transport kafka` run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KafkaBrokers {
    /// librdkafka's mock cluster (the package's `kafka-mock`, three brokers) in a process
    /// of its own: the Kafka protocol, consumer groups expiring a killed member after its
    /// session timeout; it creates topics when their metadata is asked for. An outage
    /// (`--broker-outage-at`) makes every broker stop answering; the cluster keeps its
    /// topics, offsets and groups meanwhile.
    Mock,
    /// A `tansu` broker (from `TANSU`, default `$HOME/.cache/tansu-install/bin/tansu`)
    /// keeping its topics in memory: never killed, as that would lose them.
    Tansu,
}

/// One chaos run. Defaults are the full run of issue 6 (3 workers, 50,000 messages, 20
/// kills); the CI tests pass smaller numbers.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "chaos",
    about = "Drives a workload through scale-worker processes while killing them and \
             restarting the database or the broker, then verifies from the database that \
             nothing was lost or applied twice"
)]
pub struct Plan {
    /// PostgreSQL URL.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    pub database_url: String,
    /// Worker processes.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub workers: u16,
    /// Messages to emit (events; every `--poison-every`-th one is a poison message).
    #[arg(long, default_value_t = 50_000)]
    pub messages: u64,
    /// Partition keys the messages are spread over.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub keys: u64,
    /// Every this many messages, one is poison (its handling always fails); 0: none.
    #[arg(long, default_value_t = 1_000)]
    pub poison_every: u64,
    /// Messages per emitting transaction.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub emit_batch: u64,
    /// Emission rate in messages per second; 0 emits as fast as the database takes them.
    #[arg(long, default_value_t = 1_000.0)]
    pub emit_rate: f64,
    /// How long an emission waits for a database connection before it fails (the store's
    /// `acquire_timeout`), in seconds; the library's default is 5.
    #[arg(long, default_value_t = 5.0)]
    pub emit_acquire_timeout: f64,
    /// SIGKILLs of a random worker at random moments while messages are emitted.
    #[arg(long, default_value_t = 20)]
    pub kills: u32,
    /// Also restart killed workers, now and then, with a named crash point armed
    /// (`BANDEJA_CRASH_AT=<point>@<n>`), so they abort there by themselves.
    #[arg(long)]
    pub crash_points: bool,
    /// `lock-at-most-for` of the workers, in seconds.
    #[arg(long, default_value_t = 5.0)]
    pub lease: f64,
    /// Probability that a handler attempt fails retriably.
    #[arg(long, default_value_t = 0.0)]
    pub fail_rate: f64,
    /// Each handler run takes this many milliseconds (awaited inside its transaction) and
    /// is recorded in the schema's `runs` table outside it (`scale-worker --handler-ms`);
    /// 0: handlers return at once.
    #[arg(long, default_value_t = 0)]
    pub handler_ms: u64,
    /// The transport.
    #[arg(long, value_enum, default_value_t = TransportKind::InProcess)]
    pub transport: TransportKind,
    /// With `--transport nats`: the server to use. Without it the run starts a
    /// `nats-server` of its own (from `NATS_SERVER`, default `/usr/sbin/nats-server`) on a
    /// free port, which `--broker-outage-at` may stop.
    #[arg(long)]
    pub nats_url: Option<String>,
    /// With `--transport kafka`: which brokers the run starts.
    #[arg(long, value_enum, default_value_t = KafkaBrokers::Mock)]
    pub kafka_brokers: KafkaBrokers,
    /// The `kafka-mock` executable of `--kafka-brokers mock` (default: beside
    /// `scale-worker`).
    #[arg(long)]
    pub kafka_mock_bin: Option<PathBuf>,
    /// Restart PostgreSQL this many seconds after emission starts.
    #[arg(long)]
    pub restart_database_at: Option<f64>,
    /// The command that stops PostgreSQL (run by `sh -c`)...
    #[arg(
        long,
        default_value = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | head -n1) main stop"
    )]
    pub database_stop_command: String,
    /// ...the command that starts it again...
    #[arg(
        long,
        default_value = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | head -n1) main start"
    )]
    pub database_start_command: String,
    /// ...and how many seconds it stays stopped in between (0: a plain restart).
    #[arg(long, default_value_t = 0.0)]
    pub database_down_for: f64,
    /// Kill the run's own broker (`nats-server`, `redis-server`) with SIGKILL (its
    /// clients' connections are cut without a close), or take every broker of the Kafka
    /// mock down, this many seconds after emission starts (not with `tansu`)...
    #[arg(long)]
    pub broker_outage_at: Option<f64>,
    /// ...and start it again this many seconds later.
    #[arg(long, default_value_t = 30.0)]
    pub broker_outage: f64,
    /// With NATS or Redis: partition the workers from the broker this many seconds
    /// after emission starts — a proxy between them stops moving bytes but keeps every
    /// connection open (no close, no reset)...
    #[arg(long)]
    pub broker_partition_at: Option<f64>,
    /// ...and heals this many seconds later.
    #[arg(long, default_value_t = 30.0)]
    pub broker_partition: f64,
    /// Seconds to wait for everything to be handled once emission is over.
    #[arg(long, default_value_t = 600.0)]
    pub drain_timeout: f64,
    /// Seconds between two samples of throughput and resident memory.
    #[arg(long, default_value_t = 5.0)]
    pub sample_every: f64,
    /// Fail the run if a process's resident memory ever exceeds this many MiB.
    #[arg(long, default_value_t = 150)]
    pub max_rss_mib: u64,
    /// The `scale-worker` executable (default: beside this one).
    #[arg(long)]
    pub worker_bin: Option<PathBuf>,
    /// Seed of the random choices (kill moments, victims, crash points); default: random.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep the run's schema afterwards (default: dropped when the run passes).
    #[arg(long)]
    pub keep_schema: bool,
    /// Write the report as JSON to this file too.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

impl Plan {
    /// The lease as a duration (validated by [`Plan::check`]).
    #[must_use]
    pub fn lease(&self) -> Duration {
        Duration::try_from_secs_f64(self.lease).unwrap_or(Duration::from_secs(5))
    }

    /// How long emission should take at `--emit-rate` (zero when unpaced).
    #[must_use]
    pub fn emission_span(&self) -> Duration {
        if self.emit_rate > 0.0 {
            Duration::try_from_secs_f64(self.messages as f64 / self.emit_rate)
                .unwrap_or(Duration::ZERO)
        } else {
            Duration::ZERO
        }
    }

    /// Checks the values clap cannot: positive durations and rates, faults that need
    /// what the run has.
    pub fn check(&self) -> Result<(), String> {
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "--{name} must be a positive number of seconds, not {v}"
                ))
            }
        };
        positive("lease", self.lease)?;
        positive("drain-timeout", self.drain_timeout)?;
        positive("sample-every", self.sample_every)?;
        positive("broker-outage", self.broker_outage)?;
        positive("emit-acquire-timeout", self.emit_acquire_timeout)?;
        positive("broker-partition", self.broker_partition)?;
        if !(self.database_down_for.is_finite() && self.database_down_for >= 0.0) {
            return Err(format!(
                "--database-down-for must be 0 or more seconds, not {}",
                self.database_down_for
            ));
        }
        if !(self.emit_rate.is_finite() && self.emit_rate >= 0.0) {
            return Err(format!(
                "--emit-rate must be 0 (unpaced) or a positive rate, not {}",
                self.emit_rate
            ));
        }
        if !(0.0..1.0).contains(&self.fail_rate) {
            return Err(format!(
                "--fail-rate must be in [0, 1), not {}",
                self.fail_rate
            ));
        }
        for (name, at) in [
            ("restart-database-at", self.restart_database_at),
            ("broker-outage-at", self.broker_outage_at),
            ("broker-partition-at", self.broker_partition_at),
        ] {
            if let Some(at) = at {
                if !(at.is_finite() && at >= 0.0) {
                    return Err(format!("--{name} must be seconds from the start, not {at}"));
                }
            }
        }
        if self.transport == TransportKind::Kafka {
            if self.broker_outage_at.is_some() && self.kafka_brokers == KafkaBrokers::Tansu {
                return Err(
                    "--broker-outage-at cannot be used with --kafka-brokers tansu: the run's \
                     tansu keeps its topics in memory, so killing it would lose them (the \
                     mock's brokers can go down: --kafka-brokers mock)"
                        .to_owned(),
                );
            }
            if self.broker_partition_at.is_some() {
                return Err(
                    "--broker-partition-at cannot be used with --transport kafka: Kafka clients \
                     reconnect to the broker's advertised address, around the proxy"
                        .to_owned(),
                );
            }
        }
        let own_broker = self.transport == TransportKind::Redis
            || (self.transport == TransportKind::Nats && self.nats_url.is_none())
            || (self.transport == TransportKind::Kafka && self.kafka_brokers == KafkaBrokers::Mock);
        if self.broker_outage_at.is_some() && !own_broker {
            return Err(
                "--broker-outage-at needs a broker of the run's own: --transport redis, \
                 --transport nats without --nats-url, or --transport kafka (the mock)"
                    .to_owned(),
            );
        }
        if self.broker_partition_at.is_some() && self.transport == TransportKind::InProcess {
            return Err("--broker-partition-at needs --transport nats or redis".to_owned());
        }
        if self.kills > 0 && self.emit_rate == 0.0 {
            return Err(
                "--kills needs a paced emission (--emit-rate > 0): kills are spread over its span"
                    .to_owned(),
            );
        }
        Ok(())
    }
}

/// Seconds as a duration; `secs` was checked by [`Plan::check`].
pub(crate) fn secs(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Plan {
        let mut all = vec!["chaos"];
        all.extend_from_slice(args);
        Plan::try_parse_from(all).expect("flags parse")
    }

    #[test]
    fn defaults_are_the_full_run_and_valid() {
        let p = plan(&[]);
        assert_eq!((p.workers, p.messages, p.kills), (3, 50_000, 20));
        assert_eq!(p.emission_span(), Duration::from_secs(50));
        assert_eq!(p.check(), Ok(()));
    }

    #[test]
    fn bad_values_name_the_flag() {
        let err = plan(&["--lease=-1"]).check().unwrap_err();
        assert!(err.contains("--lease"), "{err}");
        let err = plan(&["--broker-outage-at", "5"]).check().unwrap_err();
        assert!(err.contains("--transport nats"), "{err}");
        let err = plan(&["--emit-rate", "0"]).check().unwrap_err();
        assert!(err.contains("--kills"), "{err}");
        // Each refused Kafka fault, and the words its refusal must say.
        for (brokers, fault, says) in [
            ("tansu", "--broker-outage-at", "tansu"),
            ("mock", "--broker-partition-at", "kafka"),
            ("tansu", "--broker-partition-at", "kafka"),
        ] {
            let flags = [
                "--transport",
                "kafka",
                "--kafka-brokers",
                brokers,
                fault,
                "5",
            ];
            let err = plan(&flags).check().unwrap_err();
            assert!(err.contains(fault) && err.contains(says), "{err}");
        }
        assert_eq!(plan(&["--transport", "kafka"]).check(), Ok(()));
        assert_eq!(
            plan(&["--transport", "kafka"]).kafka_brokers,
            KafkaBrokers::Mock
        );
        let outage = plan(&["--transport", "kafka", "--broker-outage-at", "5"]);
        assert_eq!(outage.check(), Ok(()));
        assert!(Plan::try_parse_from(["chaos", "--workers", "0"]).is_err());
        assert!(Plan::try_parse_from(["chaos", "--emit-batch", "0"]).is_err());
    }
}
